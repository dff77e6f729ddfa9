//! The debug index and its cache, on real binaries: the index must answer every address
//! exactly as addr2line on the DWARF does (libc from the distribution's debug package,
//! C and C++ at -O2 with inlining, Fortran, a dwz'd binary), a warm cache must read no
//! DWARF at all, and damaged, foreign, stale and concurrent entries must be survived.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use object::{Object, ObjectSection, SectionKind};
use strata_daemon::debug_index::{DebugIndex, IndexCache};
use strata_daemon::images::{Image, MappedImage};
use strata_daemon::symbols::{DebugSource, SourceFrame, SymbolOptions, Symbolizer};

#[path = "../../tests/support/target.rs"]
mod target;

use target::{build_dir, compile, compile_with, fixtures_dir};

/// A binary as the symbolizer sees it mapped (the addresses below are its own, SVMAs).
fn mapped(path: &Path) -> MappedImage {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let image = Image::open(path.display().to_string(), file)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    MappedImage {
        start: 0,
        end: u64::MAX,
        offset: 0,
        path: path.display().to_string(),
        bias: 0,
        image: Ok(Arc::new(image)),
    }
}

/// Addresses to compare at: every `stride`-th byte of every executable section.
fn code_addresses(path: &Path, stride: u64) -> Vec<u64> {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut out = Vec::new();
    for section in file.sections() {
        let executable = section.kind() == SectionKind::Text;
        if executable {
            let start = section.address();
            out.extend((start..start + section.size()).step_by(stride as usize));
        }
    }
    assert!(!out.is_empty(), "{}: no code", path.display());
    out
}

fn symbolizer(cache: Option<&Path>) -> Symbolizer {
    Symbolizer::new(SymbolOptions {
        cache: cache.map(|d| IndexCache::new(d.to_path_buf())),
        ..SymbolOptions::default()
    })
}

/// A fresh, empty cache directory for one test.
fn cache_dir(name: &str) -> PathBuf {
    let dir = build_dir().join("debug-cache").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The cache's entries (`.idx` files).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir.join("v1"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.extension().is_some_and(|e| e == "idx"));
    out.sort();
    out
}

/// Every address of `path` answered by the index equals addr2line's answer; returns how
/// many addresses had line information (so that a test cannot pass on empty DWARF).
fn assert_same_answers(path: &Path, stride: u64, name: &str) -> usize {
    let m = mapped(path);
    let plain = symbolizer(None);
    let dir = cache_dir(name);
    let indexed = symbolizer(Some(&dir));
    let mut with_lines = 0;
    let mut inlined = 0;
    for svma in code_addresses(path, stride) {
        let want: Arc<[SourceFrame]> = plain.symbolize(&m, svma);
        let got = indexed.symbolize(&m, svma);
        assert_eq!(got, want, "{name} at {svma:#x}");
        with_lines += usize::from(want.iter().any(|f| f.line.is_some()));
        inlined += usize::from(want.len() > 1);
    }
    assert_eq!(indexed.debug_source(&m), plain.debug_source(&m), "{name}");
    assert_eq!(indexed.debug_notes(&m), plain.debug_notes(&m), "{name}");
    let stats = indexed.load_stats();
    assert_eq!(
        (stats.indexed, stats.cache_hits),
        (1, 0),
        "{name}: {stats:?}"
    );
    assert!(stats.cache_warnings.is_empty(), "{stats:?}");
    assert_eq!(entries(&dir).len(), 1, "{name}: one entry written");
    assert!(with_lines > 0, "{name}: no address had a line");
    println!("{name}: {with_lines} addresses with lines, {inlined} with inlined calls");
    inlined
}

/// `sym` answers every address as `plain` (addr2line, no index) does.
fn assert_as_plain(sym: &Symbolizer, plain: &Symbolizer, m: &MappedImage, addresses: &[u64]) {
    for &svma in addresses {
        assert_eq!(
            sym.symbolize(m, svma),
            plain.symbolize(m, svma),
            "{svma:#x}"
        );
    }
}

fn libc() -> PathBuf {
    let path = PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6");
    let sym = symbolizer(None);
    match sym.debug_source(&mapped(&path)) {
        DebugSource::BuildIdFile(_) => path,
        other => panic!("libc's debug info: {other:?} (is libc6-dbg installed?)"),
    }
}

#[test]
fn the_index_answers_libc_as_addr2line_does() {
    let inlined = assert_same_answers(&libc(), 5, "libc");
    assert!(inlined > 1000, "libc has inlined calls: {inlined}");
}

#[test]
fn the_index_answers_optimised_c_cpp_and_fortran_as_addr2line_does() {
    let c = compile("inline_chain.c", "inline_chain-O2-g", &["-O2", "-g"]);
    assert!(assert_same_answers(&c, 1, "inline_chain.c -O2") > 0);
    let nested = compile("nested.c", "nested-O3-g", &["-O3", "-g"]);
    assert_same_answers(&nested, 1, "nested.c -O3");
    let cpp = compile("templates.cpp", "templates-O2-g", &["-O2", "-g"]);
    assert!(assert_same_answers(&cpp, 1, "templates.cpp -O2") > 0);
    let fortran = compile_with("mpif90", "mpi_ring.f90", "ring-f90-O2-g", &["-O2", "-g"]);
    assert_same_answers(&fortran, 1, "mpi_ring.f90 -O2");
}

/// dwz moves shared DWARF into a supplementary file: names and inline chains come from it.
#[test]
fn the_index_answers_a_dwz_binary_as_addr2line_does() {
    let src = fixtures_dir().join("templates.cpp").display().to_string();
    let dir = build_dir().join("dwz-index");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("templates-a"), dir.join("templates-b"));
    for (out, opt) in [(&a, "-O2"), (&b, "-O1")] {
        run("c++", &[opt, "-g", "-o", &out.display().to_string(), &src]);
    }
    let common = dir.join("common.debug").display().to_string();
    run(
        "dwz",
        &[
            "-m",
            &common,
            &a.display().to_string(),
            &b.display().to_string(),
        ],
    );
    assert_same_answers(&a, 1, "templates.cpp after dwz");
}

fn run(cmd: &str, args: &[&str]) {
    let out = std::process::Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e} (tests/run-all.sh installs it)"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Symbolizes a spread of `path`'s addresses with a new symbolizer on `dir`.
fn symbolize_with(dir: &Path, path: &Path) -> (Symbolizer, Vec<Arc<[SourceFrame]>>) {
    let m = mapped(path);
    let sym = symbolizer(Some(dir));
    let frames = code_addresses(path, 97)
        .into_iter()
        .map(|a| sym.symbolize(&m, a))
        .collect();
    (sym, frames)
}

#[test]
fn a_warm_cache_reads_no_dwarf() {
    let libc = libc();
    let dir = cache_dir("warm");
    let (cold, cold_frames) = symbolize_with(&dir, &libc);
    let cold = cold.load_stats();
    assert_eq!((cold.indexed, cold.cache_hits), (1, 0), "{cold:?}");
    let entry = &entries(&dir)[0];
    let size = std::fs::metadata(entry).unwrap().len();

    let (warm, warm_frames) = symbolize_with(&dir, &libc);
    let warm = warm.load_stats();
    assert_eq!((warm.indexed, warm.cache_hits), (0, 1), "{warm:?}");
    assert_eq!(warm.bytes_read, size, "the entry alone is read: {warm:?}");
    assert!(
        warm.bytes_read < cold.bytes_read,
        "cold {cold:?}, warm {warm:?}"
    );
    assert_eq!(warm_frames, cold_frames);
    println!(
        "libc: cold read {} bytes in {} us, warm {} bytes in {} us",
        cold.bytes_read, cold.micros, warm.bytes_read, warm.micros
    );
}

/// Truncated, corrupt, foreign and misplaced entries: each ignored with a one-line
/// warning naming the file, rebuilt, and the answers unchanged.
#[test]
fn damaged_entries_are_ignored_with_a_warning_and_rebuilt() {
    let exe = compile("templates.cpp", "templates-O2-g", &["-O2", "-g"]);
    let other = compile("nested.c", "nested-O3-g", &["-O3", "-g"]);
    let dir = cache_dir("damaged");
    let (_, want) = symbolize_with(&dir, &exe);
    let entry = entries(&dir)[0].clone();
    let good = std::fs::read(&entry).unwrap();

    let other_dir = cache_dir("damaged-other");
    symbolize_with(&other_dir, &other);
    let foreign_entry = std::fs::read(&entries(&other_dir)[0]).unwrap();

    let mut corrupt = good.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0x40;
    let mut newer = good.clone();
    newer[8] = 99; // the format version
    let damages: [(&str, Vec<u8>, &str); 5] = [
        ("truncated", good[..good.len() / 3].to_vec(), "truncated"),
        ("corrupt", corrupt, "checksum"),
        (
            "another format",
            b"not an index at all, just text".to_vec(),
            "not",
        ),
        ("another version", newer, "version"),
        ("another binary's entry", foreign_entry, "holds"),
    ];
    for (what, bytes, says) in damages {
        std::fs::write(&entry, &bytes).unwrap();
        let (sym, got) = symbolize_with(&dir, &exe);
        let stats = sym.load_stats();
        assert_eq!(got, want, "{what}");
        assert_eq!(
            (stats.indexed, stats.cache_hits),
            (1, 0),
            "{what}: {stats:?}"
        );
        assert_eq!(stats.cache_warnings.len(), 1, "{what}: {stats:?}");
        let warning = &stats.cache_warnings[0];
        assert!(
            warning.contains(&entry.display().to_string()) && warning.contains(says),
            "{what}: {warning}"
        );
        assert!(!warning.contains('\n'), "{warning}");
        // Rebuilt: the next one hits.
        assert_eq!(std::fs::read(&entry).unwrap(), good, "{what}: rewritten");
        let (sym, _) = symbolize_with(&dir, &exe);
        assert_eq!(sym.load_stats().cache_hits, 1, "{what}");
    }
}

/// A reinstalled debug file (same build-id, new file) makes the entry stale: rebuilt
/// quietly, not trusted.
#[test]
fn an_entry_whose_debug_file_changed_is_rebuilt() {
    let exe = compile("templates.cpp", "templates-stale", &["-O2", "-g"]);
    let dir = build_dir().join("stale");
    std::fs::create_dir_all(&dir).unwrap();
    let (lib, debug) = (dir.join("templates"), dir.join("templates.debug"));
    let (e, d, l) = (
        exe.display().to_string(),
        debug.display().to_string(),
        lib.display().to_string(),
    );
    run("objcopy", &["--only-keep-debug", &e, &d]);
    run(
        "objcopy",
        &["--strip-debug", &format!("--add-gnu-debuglink={d}"), &e, &l],
    );
    let cache = cache_dir("stale");
    let (first, want) = symbolize_with(&cache, &lib);
    assert_eq!(
        first.debug_source(&mapped(&lib)),
        DebugSource::DebugLink(debug.clone())
    );
    assert_eq!(first.load_stats().indexed, 1);
    // Same bytes, rewritten (a package reinstall): its modification time changes.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&debug, std::fs::read(&debug).unwrap()).unwrap();
    let (again, got) = symbolize_with(&cache, &lib);
    let stats = again.load_stats();
    assert_eq!((stats.indexed, stats.cache_hits), (1, 0), "{stats:?}");
    assert!(stats.cache_warnings.is_empty(), "{stats:?}");
    assert_eq!(got, want);
    let (warm, _) = symbolize_with(&cache, &lib);
    assert_eq!(warm.load_stats().cache_hits, 1);
}

/// Daemons that miss on the same binary at once: one builds, the others read its entry.
#[test]
fn concurrent_symbolizers_build_an_entry_once() {
    let libc = libc();
    let dir = cache_dir("concurrent");
    let n = 6;
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (dir, libc, barrier) = (dir.clone(), libc.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let (sym, frames) = symbolize_with(&dir, &libc);
                (sym.load_stats(), frames)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let built: u32 = results.iter().map(|(s, _)| s.indexed).sum();
    let hits: u32 = results.iter().map(|(s, _)| s.cache_hits).sum();
    assert_eq!((built, hits), (1, n as u32 - 1), "{results:?}");
    assert!(results.iter().all(|(_, f)| *f == results[0].1));
    assert!(results.iter().all(|(s, _)| s.cache_warnings.is_empty()));
    assert_eq!(entries(&dir).len(), 1);
}

/// Over its size bound the cache drops the least recently used entries.
#[test]
fn the_cache_keeps_within_its_size_bound() {
    let a = compile("templates.cpp", "templates-O2-g", &["-O2", "-g"]);
    let b = compile("nested.c", "nested-O3-g", &["-O3", "-g"]);
    let c = compile("inline_chain.c", "inline_chain-O2-g", &["-O2", "-g"]);
    let dir = cache_dir("bounded");
    let use_one = |path: &Path, max: u64| {
        let sym = Symbolizer::new(SymbolOptions {
            cache: Some(IndexCache::new(dir.clone()).with_max_bytes(max)),
            ..SymbolOptions::default()
        });
        let m = mapped(path);
        sym.symbolize(&m, code_addresses(path, 1)[0]);
        sym.load_stats()
    };
    let unbounded = u64::MAX;
    use_one(&a, unbounded);
    std::thread::sleep(std::time::Duration::from_millis(20));
    use_one(&b, unbounded);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // a used again: b is now the least recently used.
    assert_eq!(use_one(&a, unbounded).cache_hits, 1);
    let size = |p: &PathBuf| std::fs::metadata(p).unwrap().len();
    assert_eq!(entries(&dir).len(), 2);
    let elsewhere = cache_dir("bounded-c");
    symbolize_with(&elsewhere, &c);
    let (a_size, b_size) = (size(&entries(&dir)[0]), size(&entries(&dir)[1]));
    let c_size = size(&entries(&elsewhere)[0]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Room for a and the larger of b and c, not all three: c's write must push b out,
    // and only b.
    let bound = a_size.max(b_size) + a_size.min(b_size).max(c_size);
    use_one(&c, bound);
    let left: Vec<String> = entries(&dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert_eq!(use_one(&a, bound).cache_hits, 1, "a kept: {left:?}");
    assert_eq!(use_one(&c, bound).cache_hits, 1, "c kept: {left:?}");
    assert_eq!(use_one(&b, unbounded).cache_hits, 0, "b dropped: {left:?}");
}

/// A builder that holds the entry's lock and never finishes (stopped, on a hung file
/// system) delays the others a bounded while: they then read the DWARF lazily, without
/// building (many waiters building at once is what starved the one builder).
#[test]
fn a_stuck_builder_does_not_stall_the_others() {
    let exe = compile("nested.c", "nested-O3-g", &["-O3", "-g"]);
    let dir = cache_dir("stuck");
    let (first, _) = symbolize_with(&cache_dir("stuck-key"), &exe);
    let key = entries(&build_dir().join("debug-cache").join("stuck-key"))[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(first.load_stats().indexed, 1);
    let held = IndexCache::new(dir.clone())
        .lock(&key)
        .expect("a fresh cache's lock");
    let (sym, frames) = symbolize_with(&dir, &exe);
    let stats = sym.load_stats();
    assert_eq!((stats.indexed, stats.cache_hits), (1, 0), "{stats:?}");
    assert!(entries(&dir).is_empty(), "the waiter did not build");
    let (_, want) = symbolize_with(&cache_dir("stuck-key"), &exe);
    assert_eq!(frames, want, "the same answers lazily");
    // Once the builder is gone, the next one builds.
    drop(held);
    let (next, _) = symbolize_with(&dir, &exe);
    assert_eq!(next.load_stats().indexed, 1);
    assert_eq!(entries(&dir).len(), 1, "and wrote its entry");
}

/// A binary over the inline limit is not indexed while the attach waits: it is read
/// lazily (the same answers), counted as deferred, and a detached builder at work on it
/// (its lock marked) is not waited for.
#[test]
fn a_binary_over_the_inline_limit_is_read_lazily_and_its_builder_not_waited_for() {
    let exe = compile("templates.cpp", "templates-O2-g", &["-O2", "-g"]);
    let m = mapped(&exe);
    let key = Symbolizer::index_key(m.image().unwrap()).unwrap();
    let dir = cache_dir("deferred");
    let cache = IndexCache::new(dir.clone());
    let builder = cache.try_lock(&key).expect("a fresh cache's lock is free");
    builder.mark_detached();
    let sym = Symbolizer::new(SymbolOptions {
        cache: Some(cache),
        inline_limit: 0,
        // No builder to start: the test stands in for it.
        builder: None,
        ..SymbolOptions::default()
    });
    let plain = symbolizer(None);
    let addresses = code_addresses(&exe, 1);
    // The first lookup is the one that would wait for the lock.
    let started = std::time::Instant::now();
    sym.symbolize(&m, addresses[0]);
    let took = started.elapsed();
    assert_as_plain(&sym, &plain, &m, &addresses);
    let stats = sym.load_stats();
    assert_eq!(
        (stats.deferred, stats.indexed, stats.cache_hits),
        (1, 1, 0),
        "{stats:?}"
    );
    assert!(entries(&dir).is_empty(), "nothing written by the daemon");
    // The cache waits 3 s for an inline builder; this one is not waited for at all.
    assert!(
        took < std::time::Duration::from_secs(3),
        "the first lookup took {took:?}"
    );
    // Once the builder is gone (it died, say), a daemon over the limit still only reads
    // lazily: without a builder binary to start, nothing is written.
    drop(builder);
    let again = Symbolizer::new(SymbolOptions {
        cache: Some(IndexCache::new(dir.clone())),
        inline_limit: 0,
        builder: None,
        ..SymbolOptions::default()
    });
    again.symbolize(&m, addresses[0]);
    assert_eq!(again.load_stats().deferred, 1);
    assert!(entries(&dir).is_empty());
}

/// Cold, the front end sends a partial index: the units covering the addresses the
/// daemons' stacks hit. Where it covers an address it answers as the whole index (and
/// addr2line) would; elsewhere the daemon reads the DWARF itself, with the same answers.
/// A partial index is never written to a cache.
#[test]
fn a_partial_index_answers_where_it_covers_and_leaves_the_rest_to_the_dwarf() {
    let path = libc();
    let m = mapped(&path);
    let image = m.image().unwrap().clone();
    let all = code_addresses(&path, 5);
    // A hung job's stacks: a few addresses spread over the code.
    let mut wanted: Vec<u64> = all.iter().step_by(all.len() / 7).copied().collect();
    wanted.sort_unstable();
    let front_dir = cache_dir("partial-front");
    let front = Symbolizer::new(SymbolOptions {
        cache: Some(IndexCache::new(front_dir.clone())),
        // No builder to start: the whole entry is not this test's business.
        builder: None,
        ..SymbolOptions::default()
    });
    let bytes = front
        .index_bytes_for(&image, &m.path, &wanted)
        .expect("libc has DWARF");
    let stats = front.load_stats();
    assert_eq!((stats.indexed, stats.partial), (1, 1), "{stats:?}");
    assert!(
        entries(&front_dir).is_empty(),
        "a partial index is not cached"
    );
    let partial = DebugIndex::open(bytes.clone()).expect("a valid index");
    assert!(partial.is_partial());
    let whole = symbolizer(Some(&cache_dir("partial-whole")))
        .index_bytes(&image, &m.path)
        .expect("the whole index");
    let whole = DebugIndex::open(whole).expect("a valid index");
    assert!(!whole.is_partial());
    assert!(
        wanted.iter().all(|&a| partial.covers(a)),
        "it covers what was wanted"
    );
    assert!(all.iter().all(|&a| whole.covers(a)));
    assert!(
        partial.len() * 4 < whole.len(),
        "partial {} bytes, whole {}",
        partial.len(),
        whole.len()
    );
    let covered = all.iter().filter(|&&a| partial.covers(a)).count();
    println!(
        "libc: partial index {} bytes, whole {}; {covered} of {} addresses covered",
        partial.len(),
        whole.len(),
        all.len()
    );
    assert!(
        covered > 0 && covered < all.len() / 2,
        "{covered} of {}",
        all.len()
    );
    assert!(
        IndexCache::new(front_dir.clone())
            .put("k", &partial)
            .is_err(),
        "the cache refuses a partial index"
    );

    // A daemon given the partial index down the tree.
    let node_dir = cache_dir("partial-node");
    let daemon = symbolizer(Some(&node_dir));
    daemon.provide(partial);
    let plain = symbolizer(None);
    assert_as_plain(&daemon, &plain, &m, &all);
    let stats = daemon.load_stats();
    assert_eq!(
        (stats.provided, stats.indexed, stats.cache_hits),
        (1, 1, 0),
        "the rest from the DWARF: {stats:?}"
    );
    assert!(
        entries(&node_dir).is_empty(),
        "not written to the node's cache"
    );
}
