//! The symbolizer's unit tests (the module is near the size limit).

use super::locate::{build_id_paths, parse_debug_object};
use super::*;
use std::path::Path;

#[test]
fn demangles_cpp_without_return_types() {
    assert_eq!(
        demangle("_ZN6SorterIiE3runEi", Some(gimli::DW_LANG_C_plus_plus)),
        "Sorter<int>::run(int)"
    );
    // By shape, without DWARF's language: template functions lose their return type.
    assert_eq!(demangle("_Z3maxIiET_S0_S0_", None), "max<int>(int, int)",);
    // Not mangled, or not validly: unchanged.
    assert_eq!(demangle("_Zgarbage", None), "_Zgarbage");
    assert_eq!(demangle("main", Some(gimli::DW_LANG_C_plus_plus)), "main");
}

#[test]
fn demangles_rust_without_hash() {
    let legacy = "_ZN4core3fmt5write17h0123456789abcdefE";
    assert_eq!(demangle(legacy, None), "core::fmt::write");
    assert_eq!(
        demangle(legacy, Some(gimli::DW_LANG_Rust)),
        "core::fmt::write"
    );
    let v0 = "_RNvCs1234_7mycrate3foo";
    assert_eq!(demangle(v0, None), "mycrate::foo");
}

#[test]
fn fortran_module_procedures_read_as_paths_and_externals_stay() {
    assert_eq!(demangle("__mymod_MOD_solve", None), "mymod::solve");
    assert_eq!(
        demangle("__mymod_MOD_solve", Some(gimli::DW_LANG_Fortran90)),
        "mymod::solve"
    );
    for kept in [
        "mpi_barrier_",
        "pmpi_barrier_",
        "solve_",
        "MAIN__",
        "PMPI_Barrier",
    ] {
        assert_eq!(demangle(kept, None), kept);
    }
    // Not gfortran's shape.
    assert_eq!(demangle("__MOD_x", None), "__MOD_x");
    assert_eq!(demangle("__a_MOD_", None), "__a_MOD_");
}

#[test]
fn build_id_paths_split_the_first_byte() {
    let p = build_id_paths(&[PathBuf::from("/d")], &[0xab, 0xcd, 0x01], ".debug");
    assert_eq!(p, vec![PathBuf::from("/d/.build-id/ab/cd01.debug")]);
    assert!(build_id_paths(&[PathBuf::from("/d")], &[], ".debug").is_empty());
}

#[test]
fn garbage_debug_files_are_errors() {
    assert!(parse_debug_object(b"").is_err());
    assert!(parse_debug_object(b"\x7fELF\x02\x01\x01junk").is_err());
    // An ELF file without DWARF (this test binary is built with debug info only in
    // some profiles, so use a header-only prefix of it: it must not panic).
    let mut me = std::fs::read("/proc/self/exe").unwrap();
    me.truncate(4096);
    let _ = parse_debug_object(&me);
}

#[test]
fn symbolizer_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Symbolizer>();
}

#[test]
fn short_dwarf_names_get_their_path_from_the_symbol_table() {
    assert_eq!(
        qualified("strata_frontend::demo::rank_main", "rank_main").as_deref(),
        Some("strata_frontend::demo::rank_main")
    );
    assert_eq!(
        qualified("Sorter<int>::run(int)", "run").as_deref(),
        Some("Sorter<int>::run(int)")
    );
    assert_eq!(qualified("main", "main"), None);
    assert_eq!(qualified("a::rerun", "run"), None);
    assert_eq!(qualified("a::run_fast", "run"), None);
    assert_eq!(qualified("x::y", "a::y"), None);
}

/// Builds `int main(void) { return 0; }` into `dir/name` with `flags`.
fn compile(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join("m.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let out = dir.join(name);
    let status = std::process::Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("gcc (tests/run-all.sh installs it)");
    assert!(status.success());
    out
}

fn run(tool: &str, args: &[&std::ffi::OsStr]) {
    let status = std::process::Command::new(tool)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{tool} (binutils): {e}"));
    assert!(status.success(), "{tool} {args:?}");
}

#[test]
fn may_have_dwarf_looks_where_the_loader_reads_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let open = |p: &Path| Image::parse(p.display().to_string(), std::fs::read(p).unwrap()).unwrap();
    let check =
        |p: &Path, dirs: &[PathBuf]| may_have_dwarf(&open(p), &p.display().to_string(), dirs);
    let none: &[PathBuf] = &[];

    let embedded = compile(d, "embedded", &["-g"]);
    assert!(check(&embedded, none));
    let bare = compile(d, "bare", &["-s", "-Wl,--build-id"]);
    assert!(!check(&bare, none), "stripped, no debug file anywhere");

    // Split by .gnu_debuglink: found beside the binary, gone once the file is.
    let linked = compile(d, "linked", &["-g", "-Wl,--build-id"]);
    let debug = d.join("linked.debug");
    run(
        "objcopy",
        &[
            "--only-keep-debug".as_ref(),
            linked.as_os_str(),
            debug.as_os_str(),
        ],
    );
    run("strip", &["--strip-debug".as_ref(), linked.as_os_str()]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    run("objcopy", &[link.as_ref(), linked.as_os_str()]);
    assert!(check(&linked, none));

    // By build-id under a debug directory, after the debuglink file is gone.
    let image = open(&linked);
    let id = image.build_id.clone().expect("a build-id");
    let debug_dir = d.join("debug-dir");
    let by_id = debug_dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &by_id).unwrap();
    assert!(
        !check(&linked, none),
        "neither beside it nor under a debug directory"
    );
    assert!(check(&linked, std::slice::from_ref(&debug_dir)));
}

#[test]
fn binaries_without_build_id_are_cached_by_path_size_and_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let binary = compile(dir.path(), "no-id", &["-g", "-Wl,--build-id=none"]);
    let path = binary.display().to_string();
    let open =
        || Arc::new(Image::open(path.clone(), std::fs::File::open(&binary).unwrap()).unwrap());
    let symbolizer = || {
        Symbolizer::new(SymbolOptions {
            cache: Some(IndexCache::new(dir.path().join("cache"))),
            ..SymbolOptions::default()
        })
    };
    let image = open();
    assert_eq!(image.build_id, None);
    let key = Symbolizer::index_key(&image).expect("a key from the file");
    assert!(key.starts_with("path-"), "{key}");
    assert_eq!(Symbolizer::index_key(&open()), Some(key.clone()), "stable");
    assert_eq!(
        Symbolizer::index_key(&Image::parse("x", std::fs::read(&binary).unwrap()).unwrap()),
        None,
        "from memory: no file to key it by"
    );

    let cold = symbolizer();
    assert!(cold.wants_index(&image, &path).is_some());
    assert!(cold.index_bytes(&image, &path).is_some());
    assert_eq!(cold.load_stats().indexed, 1);
    let warm = symbolizer();
    assert_eq!(
        warm.wants_index(&image, &path),
        None,
        "cached: nothing wanted"
    );
    assert!(warm.index_bytes(&image, &path).is_some());
    let stats = warm.load_stats();
    assert_eq!((stats.indexed, stats.cache_hits), (0, 1), "{stats:?}");

    // Rebuilt in place: another key, so the old entry cannot name the new code.
    std::thread::sleep(std::time::Duration::from_millis(20));
    compile(dir.path(), "no-id", &["-g", "-O2", "-Wl,--build-id=none"]);
    assert_ne!(Symbolizer::index_key(&open()), Some(key));
}
