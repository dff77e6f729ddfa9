//! What symbolization costs: the first address of a binary (finding and loading its debug
//! information, then the lookup: paid once per binary per daemon), a new address in a
//! binary already loaded (paid once per distinct address), and an address seen before
//! (every further frame at it: a cache hit). For libc (a separate, compressed debug file
//! when libc6-dbg is installed) and a C++ -O2 -g binary with inlining (fixture
//! templates.cpp, compiled here with c++).
//!
//! `cargo bench -p strata-daemon --bench symbols`

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use strata_daemon::images::{Image, MappedImage};
use strata_daemon::symbols::{SymbolOptions, Symbolizer};

/// A mapping of the file at `path` at its own addresses (bias 0): the symbolizer only
/// looks at the image and the path.
fn mapped(path: &Path) -> MappedImage {
    let image = Image::parse(path.display().to_string(), std::fs::read(path).unwrap()).unwrap();
    MappedImage {
        start: 0,
        end: u64::MAX,
        offset: 0,
        path: path.display().to_string(),
        bias: 0,
        image: Ok(Arc::new(image)),
    }
}

fn templates_binary(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("templates-O2-g");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/templates.cpp");
    let ok = Command::new("c++")
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .expect("c++");
    assert!(ok.success());
    out
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let libc = mapped(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    let cpp = mapped(&templates_binary(dir.path()));
    let image = |m: &MappedImage| m.image().unwrap().clone();
    // Inside functions, as a return address would be.
    let libc_pc = image(&libc).symbol_address("pause").unwrap() + 0x10;
    let libc_other = image(&libc).symbol_address("qsort").unwrap() + 0x10;
    let cpp_pc = image(&cpp).symbol_address("_ZN6SorterIiE3runEi").unwrap() + 0x40;
    let cpp_other = image(&cpp).symbol_address("main").unwrap() + 0x10;
    let sym = Symbolizer::new(SymbolOptions::default());
    eprintln!(
        "libc: {:?} {:?}\ntemplates: {:?} {:?}",
        sym.debug_source(&libc),
        sym.symbolize(&libc, libc_pc),
        sym.debug_source(&cpp),
        sym.symbolize(&cpp, cpp_pc)
    );

    let mut cold = c.benchmark_group("first address of a binary");
    cold.sample_size(20);
    for (name, m, pc) in [("libc", &libc, libc_pc), ("templates", &cpp, cpp_pc)] {
        cold.bench_function(name, |b| {
            b.iter_batched(
                || Symbolizer::new(SymbolOptions::default()),
                |s| black_box(s.symbolize(m, pc)),
                BatchSize::PerIteration,
            )
        });
    }
    cold.finish();

    let mut new_addr = c.benchmark_group("new address, binary loaded");
    new_addr.sample_size(20);
    for (name, m, warm, pc) in [
        ("libc", &libc, libc_pc, libc_other),
        ("templates", &cpp, cpp_pc, cpp_other),
    ] {
        new_addr.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let s = Symbolizer::new(SymbolOptions::default());
                    s.symbolize(m, warm);
                    s
                },
                |s| black_box(s.symbolize(m, pc)),
                BatchSize::PerIteration,
            )
        });
    }
    new_addr.finish();

    let mut hit = c.benchmark_group("address seen before");
    for (name, m, pc) in [("libc", &libc, libc_pc), ("templates", &cpp, cpp_pc)] {
        sym.symbolize(m, pc);
        hit.bench_function(name, |b| b.iter(|| black_box(sym.symbolize(m, pc))));
    }
    hit.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
