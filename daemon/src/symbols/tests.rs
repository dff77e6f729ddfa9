//! The symbolizer's unit tests (the module is near the size limit).

use super::*;

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
