//! Generates the `Overlay` gRPC service (client and server stubs) for the messages declared
//! in `src/overlay.rs`. tonic's manual builder needs no `.proto` file and no `protoc`.

fn main() {
    let link = tonic_build::manual::Method::builder()
        .name("link")
        .route_name("Link")
        .input_type("crate::overlay::Up")
        .output_type("crate::overlay::Down")
        .codec_path("tonic_prost::ProstCodec")
        .client_streaming()
        .server_streaming()
        .build();
    let service = tonic_build::manual::Service::builder()
        .name("Overlay")
        .package("strata.v1")
        .comment("A child (daemon or commnode) links to its parent: it streams results up, the parent streams commands down.")
        .method(link)
        .build();
    tonic_build::manual::Builder::new().compile(&[service]);
}
