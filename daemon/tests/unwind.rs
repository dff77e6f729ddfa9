//! Unwinding real processes: C fixtures (`tests/fixtures/*.c`) compiled by the test with
//! `cc` in several ways (-O0, -O2 -fomit-frame-pointer, PIE and not, stripped, without
//! CFI), blocked in `pause()`. Each thread is stopped with ptrace just long enough to copy
//! its registers and stack, detached, and unwound from the copy; the result is checked
//! against the fixture's symbols and, frame for frame, against `eu-stack`.
//!
//! The snapshot helper here is test scaffolding standing in for the capture module.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid as NixPid;
use strata_daemon::images::{AddressSpace, Image, ImageCache};
use strata_daemon::memory::{Layered, MemoryCopy, MemoryReader, ProcessMemory, Registers};
use strata_daemon::procfs::{self, Pid};
use strata_daemon::unwind::{
    FrameKind, KnownRegs, Recovery, UnwoundStack, WalkEnd, registers_from_sigframe, unwind,
};

/// Kills the fixture on Drop, so that a failing assertion leaves nothing behind.
struct Fixture {
    child: Child,
    /// Kept open: the fixture must not get SIGPIPE for writing after the test read it.
    _stdout: Option<BufReader<ChildStdout>>,
}

impl Fixture {
    fn pid(&self) -> Pid {
        self.child.id() as Pid
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The compiled fixtures, built once per test binary into a temporary directory.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

fn fixture_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.c"))
}

/// Compiles `tests/fixtures/SRC.c` with `flags` into `OUT` (once per test binary; the
/// tests that share an output share the flags).
fn compile(src: &str, out: &str, flags: &[&str]) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let exe = build_dir().join(out);
    if !exe.exists() {
        let status = Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(&exe)
            .arg(fixture_source(src))
            .arg("-lpthread")
            .status()
            .expect("run cc");
        assert!(status.success(), "cc {flags:?} {src}");
    }
    exe
}

/// A stripped copy of `exe` (no `.symtab`; `.eh_frame` stays).
fn stripped(exe: &Path) -> PathBuf {
    let out = exe.with_extension("stripped");
    if !out.exists() {
        let status = Command::new("strip")
            .arg("-o")
            .arg(&out)
            .arg(exe)
            .status()
            .expect("run strip");
        assert!(status.success());
    }
    out
}

/// Starts `exe` and waits until it has printed `ready` `lines` times and all its threads
/// sleep (blocked in `pause()` or a join).
fn start(exe: &Path, args: &[&str], lines: usize) -> Fixture {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fixture");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut fixture = Fixture {
        child,
        _stdout: None,
    };
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        stdout.read_line(&mut line).expect("fixture output");
        assert_eq!(line, "ready\n", "fixture {exe:?} did not get ready");
    }
    fixture._stdout = Some(stdout);
    let pid = fixture.pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tids = procfs::threads(pid).expect("threads");
        let sleeping = tids
            .iter()
            .all(|&t| procfs::thread_stat(pid, t).is_ok_and(|s| s.state == 'S'));
        if sleeping && !tids.is_empty() {
            return fixture;
        }
        assert!(Instant::now() < deadline, "fixture threads never slept");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What capture will hand the unwinder for one thread: registers and a stack copy taken
/// while the thread was stopped.
struct Snapshot {
    regs: Registers,
    stack: MemoryCopy,
}

/// Stops one thread (PTRACE_SEIZE + PTRACE_INTERRUPT, never SIGSTOP), copies its
/// registers and its stack from sp - 128 (the red zone) to the end of the stack mapping,
/// and detaches.
fn snapshot(pid: Pid, tid: Pid) -> Snapshot {
    let t = NixPid::from_raw(tid);
    ptrace::seize(t, ptrace::Options::empty()).expect("seize");
    let taken = (|| {
        ptrace::interrupt(t).map_err(|e| format!("interrupt: {e}"))?;
        match waitpid(t, Some(WaitPidFlag::__WALL)).map_err(|e| format!("waitpid: {e}"))? {
            WaitStatus::PtraceEvent(_, Signal::SIGTRAP, _) | WaitStatus::Stopped(..) => {}
            other => return Err(format!("unexpected stop {other:?}")),
        }
        let regs = Registers::from_user_regs(&ptrace::getregs(t).map_err(|e| e.to_string())?);
        let sp = regs.sp();
        let maps = procfs::maps(pid).map_err(|e| e.to_string())?;
        let m = maps
            .iter()
            .find(|m| m.start <= sp && sp < m.end)
            .ok_or("sp in no mapping")?;
        let base = sp.saturating_sub(128).max(m.start);
        let mut bytes = vec![0u8; (m.end - base) as usize];
        ProcessMemory::new(pid)
            .read(base, &mut bytes)
            .map_err(|e| e.to_string())?;
        Ok(Snapshot {
            regs,
            stack: MemoryCopy { base, bytes },
        })
    })();
    ptrace::detach(t, None).expect("detach");
    taken.unwrap_or_else(|e: String| panic!("snapshot of {tid}: {e}"))
}

/// A started fixture and its images.
struct Target {
    fixture: Fixture,
    space: AddressSpace,
}

fn launch(exe: &Path, args: &[&str], lines: usize) -> Target {
    let fixture = start(exe, args, lines);
    let space = load_space(fixture.pid());
    Target { fixture, space }
}

fn load_space(pid: Pid) -> AddressSpace {
    let maps = procfs::maps(pid).expect("maps");
    AddressSpace::load(pid, &maps, &ProcessMemory::new(pid), &ImageCache::new())
}

/// Unwinds a snapshot from the copy layered over the live process, and checks that the
/// copy alone gives the same frames (CFI lives in the images: only the stack is read).
fn unwind_snapshot(pid: Pid, snap: &Snapshot, space: &AddressSpace) -> UnwoundStack {
    let live = ProcessMemory::new(pid);
    let layered = Layered {
        first: &snap.stack,
        second: &live,
    };
    let s = unwind(&snap.regs, &layered, space, 256);
    let from_copy = unwind(&snap.regs, &snap.stack, space, 256);
    assert_eq!(s, from_copy, "the stack copy alone should suffice");
    s
}

/// The function name of each frame, from `symbols` (an image by mapping path) or the
/// frame's own image; `?` when there is none.
fn names(s: &UnwoundStack, space: &AddressSpace, twins: &HashMap<String, Image>) -> Vec<String> {
    s.frames
        .iter()
        .map(|f| {
            let Some(m) = f.module(space) else {
                return "?".to_string();
            };
            let svma = f.lookup_pc - m.bias;
            let sym = match twins.get(&m.path) {
                Some(twin) => twin.symbol(svma),
                None => m.image().and_then(|i| i.symbol(svma)),
            };
            sym.map_or("?".to_string(), |(n, _)| n.to_string())
        })
        .collect()
}

/// `eu-stack -a -p PID`, run while the process is not traced: for each thread, the pc of
/// each frame and whether eu-stack looked it up at pc - 1 (`- 1` in the activation column,
/// which eu-stack prints for every frame but the innermost and a signal-interrupted one).
fn eu_stack(pid: Pid) -> HashMap<Pid, Vec<(u64, bool)>> {
    let out = Command::new("eu-stack")
        .args(["-a", "-n", "0", "-p", &pid.to_string()])
        .output()
        .expect("run eu-stack");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut threads: HashMap<Pid, Vec<(u64, bool)>> = HashMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("TID ") {
            let tid = rest.trim_end_matches(':').parse().expect("eu-stack TID");
            threads.insert(tid, Vec::new());
            current = Some(tid);
        } else if line.starts_with('#') {
            let mut words = line.split_whitespace().skip(1);
            let addr = words
                .next()
                .and_then(|a| a.strip_prefix("0x"))
                .expect("address");
            let addr = u64::from_str_radix(addr, 16).expect("hex address");
            let minus_one = line.contains(&format!("{:#018x} - 1", addr));
            let tid = current.expect("frame before TID");
            threads.get_mut(&tid).expect("tid").push((addr, minus_one));
        }
    }
    assert!(!threads.is_empty(), "eu-stack printed nothing: {text}");
    threads
}

/// Our frames against eu-stack's: same pcs, same pc-1 lookups, frame for frame.
fn assert_matches_eu_stack(s: &UnwoundStack, eu: &[(u64, bool)], what: &str) {
    let ours: Vec<(u64, bool)> = s
        .frames
        .iter()
        .map(|f| (f.pc, f.lookup_pc != f.pc))
        .collect();
    let fmt = |v: &[(u64, bool)]| {
        v.iter()
            .map(|(a, m)| format!("{a:#x}{}", if *m { "-1" } else { "" }))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        fmt(&ours),
        fmt(eu),
        "{what}: ours (end {:?}) vs eu-stack",
        s.end
    );
}

/// The index of `seq` as a contiguous run in `names`.
fn find_run(names: &[String], seq: &[&str]) -> Option<usize> {
    names
        .windows(seq.len())
        .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
}

/// Runs a `nested` build and checks main's stack: level3, level2, level1, main in order
/// right above libc's `pause`, a normal end, and eu-stack's frames. `twin` is the
/// unstripped build whose symbols name a stripped one.
fn check_nested(exe: &Path, twin: Option<&Path>, expect_how: Option<Recovery>) {
    let Target { fixture, space } = launch(exe, &[], 1);
    let pid = fixture.pid();
    let snap = snapshot(pid, pid);
    let s = unwind_snapshot(pid, &snap, &space);
    let mut twins = HashMap::new();
    if let Some(twin) = twin {
        let img = Image::parse("twin", std::fs::read(twin).unwrap()).unwrap();
        let exe_path = std::fs::canonicalize(exe).unwrap();
        twins.insert(exe_path.to_string_lossy().into_owned(), img);
        // Without the twin, the stripped binary names none of them.
        let own = names(&s, &space, &HashMap::new());
        assert!(!own.iter().any(|n| n == "level2"), "{own:?}");
    }
    let n = names(&s, &space, &twins);
    let at = find_run(&n, &["level3", "level2", "level1", "main"])
        .unwrap_or_else(|| panic!("{exe:?}: frames {n:?}, end {:?}", s.end));
    // Only libc frames (pause and what it calls) lie inside level3.
    for f in &s.frames[..at] {
        let m = f.module(&space).expect("mapped");
        assert!(m.path.contains("libc"), "{exe:?}: {n:?}");
    }
    assert_eq!(s.end, WalkEnd::Outermost, "{exe:?}: {n:?}");
    assert_eq!(s.frames[0].kind, FrameKind::Innermost);
    assert!(s.frames[1..].iter().all(|f| f.kind == FrameKind::Call));
    if let Some(how) = expect_how {
        // The frames recovered from level3's, level2's and level1's steps.
        for f in &s.frames[at + 1..at + 4] {
            assert_eq!(f.how, how, "{exe:?}: {:?}", s.frames);
        }
    }
    // A caller's rsp is its callee's CFA.
    assert_eq!(s.frames[at + 1].reg(Registers::RSP), s.frames[at].cfa);
    let eu = eu_stack(pid);
    assert_matches_eu_stack(&s, &eu[&pid], &exe.display().to_string());
}

const O0_PIE: &[&str] = &["-O0", "-fPIE", "-pie"];
const O0_NO_PIE: &[&str] = &["-O0", "-fno-PIE", "-no-pie"];
const O2_PIE: &[&str] = &["-O2", "-fomit-frame-pointer", "-fPIE", "-pie"];
const O2_NO_PIE: &[&str] = &["-O2", "-fomit-frame-pointer", "-fno-PIE", "-no-pie"];

#[test]
fn nested_o0_pie() {
    check_nested(
        &compile("nested", "nested-O0-pie", O0_PIE),
        None,
        Some(Recovery::Cfi),
    );
}

#[test]
fn nested_o2_omit_frame_pointer_pie() {
    check_nested(
        &compile("nested", "nested-O2-pie", O2_PIE),
        None,
        Some(Recovery::Cfi),
    );
}

#[test]
fn nested_o0_no_pie() {
    check_nested(
        &compile("nested", "nested-O0-nopie", O0_NO_PIE),
        None,
        Some(Recovery::Cfi),
    );
}

#[test]
fn nested_o2_omit_frame_pointer_no_pie() {
    check_nested(
        &compile("nested", "nested-O2-nopie", O2_NO_PIE),
        None,
        Some(Recovery::Cfi),
    );
}

#[test]
fn nested_stripped_named_by_unstripped_twin() {
    let exe = compile("nested", "nested-O2-pie-twin", O2_PIE);
    check_nested(&stripped(&exe), Some(&exe), Some(Recovery::Cfi));
}

/// No CFI for the fixture's own functions: the walk goes through them by the frame
/// pointer chain (-O0 keeps rbp as frame pointer) and back to CFI in libc.
#[test]
fn nested_without_cfi_uses_frame_pointers() {
    let exe = compile(
        "nested",
        "nested-O0-nocfi",
        &[
            "-O0",
            "-fno-omit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    );
    check_nested(&exe, None, Some(Recovery::FramePointer));
}

/// The handler's stack through the trampoline to the faulting frame, for glibc's
/// `__restore_rt` (CFI with expressions, `own_restorer` absent) and for a trampoline
/// without CFI. Returns the fixture (kept alive for eu-stack), the stack and the index of
/// `handler_waits`.
fn signal_stack(args: &[&str]) -> (Fixture, UnwoundStack, usize) {
    let exe = compile("signal", "signal-O2-pie", O2_PIE);
    let Target { fixture, space } = launch(&exe, args, 1);
    let pid = fixture.pid();
    let snap = snapshot(pid, pid);
    let s = unwind_snapshot(pid, &snap, &space);
    let n = names(&s, &space, &HashMap::new());
    let at =
        find_run(&n, &["handler_waits", "handler"]).unwrap_or_else(|| panic!("{n:?} {:?}", s.end));
    assert!(n.len() > at + 4, "stopped early: {n:?} {:?}", s.end);
    let (tramp, interrupted) = (&s.frames[at + 2], &s.frames[at + 3]);
    assert_eq!(tramp.kind, FrameKind::SignalHandlerTrampoline, "{n:?}");
    assert_eq!(tramp.lookup_pc, tramp.pc);
    assert_eq!(n[at + 3], "faulting", "{n:?}");
    assert_eq!(n[at + 4], "main", "{n:?}");
    assert_eq!(interrupted.kind, FrameKind::SignalInterrupted);
    assert_eq!(
        interrupted.lookup_pc, interrupted.pc,
        "interrupted: looked up at pc"
    );
    assert_eq!(
        interrupted.known,
        KnownRegs::ALL,
        "a signal frame restores every register"
    );
    assert!(s.frames[at + 4..].iter().all(|f| f.kind == FrameKind::Call));
    assert_eq!(s.end, WalkEnd::Outermost, "{n:?}");
    // The faulting instruction reads through null_pointer: a load from address 0 whose
    // base register holds 0 in the interrupted frame.
    assert!(
        interrupted.regs.values[..16].contains(&0),
        "{:?}",
        interrupted.regs
    );
    // The ucontext layout, checked on a real signal frame: what the trampoline's stack
    // holds is what the unwinder recovered for the interrupted frame (by glibc's CFI
    // expressions, or by reading the ucontext for the trampoline without CFI).
    let sp = tramp.reg(Registers::RSP).expect("sp in the trampoline");
    let from_uc = registers_from_sigframe(sp, &snap.stack).expect("ucontext in the copy");
    assert_eq!(from_uc.values, interrupted.regs.values);
    (fixture, s, at)
}

#[test]
fn signal_handler_through_glibc_restore_rt() {
    let (fixture, s, at) = signal_stack(&[]);
    assert_eq!(s.frames[at + 2].how, Recovery::Cfi);
    // Recovered by __restore_rt's CFI (the S augmentation and register expressions).
    assert_eq!(s.frames[at + 3].how, Recovery::Cfi);
    let eu = eu_stack(fixture.pid());
    assert_matches_eu_stack(&s, &eu[&fixture.pid()], "signal");
}

#[test]
fn signal_handler_through_trampoline_without_cfi() {
    let (fixture, s, at) = signal_stack(&["own-restorer"]);
    assert_eq!(s.frames[at + 3].how, Recovery::SignalContext);
    // eu-stack (elfutils 0.188) finds no CFI for the trampoline, looks it up at pc - 1
    // and stops there: compare the pcs it has.
    let eu = eu_stack(fixture.pid());
    let eu = &eu[&fixture.pid()];
    assert_eq!(
        eu.len(),
        at + 3,
        "eu-stack got further than expected: {eu:?}"
    );
    let ours: Vec<u64> = s.frames[..at + 3].iter().map(|f| f.pc).collect();
    let theirs: Vec<u64> = eu.iter().map(|f| f.0).collect();
    assert_eq!(ours, theirs);
}

#[test]
fn every_thread_of_a_threaded_process() {
    let exe = compile("threads", "threads-O2-pie", O2_PIE);
    let Target { fixture, space } = launch(&exe, &[], 3);
    let pid = fixture.pid();
    let tids = procfs::threads(pid).expect("threads");
    assert_eq!(tids.len(), 4);
    let stacks: Vec<(Pid, UnwoundStack)> = tids
        .iter()
        .map(|&tid| (tid, unwind_snapshot(pid, &snapshot(pid, tid), &space)))
        .collect();
    let eu = eu_stack(pid);
    let expected: [&[&str]; 3] = [
        &["block", "alpha_inner", "alpha", "run_alpha"],
        &["block", "beta_inner2", "beta_inner1", "beta", "run_beta"],
        &["block", "gamma_inner", "gamma_", "run_gamma"],
    ];
    let mut found = [0; 3];
    for (tid, s) in &stacks {
        let n = names(s, &space, &HashMap::new());
        assert_eq!(s.end, WalkEnd::Outermost, "thread {tid}: {n:?}");
        assert_matches_eu_stack(s, &eu[tid], &format!("thread {tid}"));
        if *tid == pid {
            assert!(n.iter().any(|f| f == "main"), "{n:?}");
            continue;
        }
        for (i, run) in expected.iter().enumerate() {
            if find_run(&n, run).is_some() {
                found[i] += 1;
            }
        }
    }
    assert_eq!(found, [1, 1, 1], "each thread's functions exactly once");
}

/// Rough cost of one unwind (printed; run with --nocapture), bounded loosely so that a
/// regression to re-parsing images per call fails.
#[test]
fn unwinding_is_cheap() {
    let exe = compile("nested", "nested-O2-pie", O2_PIE);
    let Target { fixture, space } = launch(&exe, &[], 1);
    let pid = fixture.pid();
    let snap = snapshot(pid, pid);
    let first = unwind(&snap.regs, &snap.stack, &space, 256);
    assert_eq!(first.end, WalkEnd::Outermost);
    let runs = 2000;
    let t = Instant::now();
    for _ in 0..runs {
        let s = unwind(&snap.regs, &snap.stack, &space, 256);
        assert_eq!(s.frames.len(), first.frames.len());
    }
    let per = t.elapsed() / runs;
    eprintln!(
        "unwind: {per:?} per stack of {} frames ({:?} per frame)",
        first.frames.len(),
        per / first.frames.len() as u32
    );
    assert!(per < Duration::from_millis(2), "{per:?} per unwind");
}

/// A binary deleted and replaced by another one after the process started: its image must
/// come from /proc/PID/map_files, not from the path (which now names the other binary).
#[test]
fn binary_replaced_after_start_is_read_from_map_files() {
    let built = compile("nested", "nested-O2-pie", O2_PIE);
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("replaced");
    std::fs::copy(&built, &exe).unwrap();
    let Target { fixture, .. } = launch(&exe, &[], 1);
    let pid = fixture.pid();
    std::fs::remove_file(&exe).unwrap();
    std::fs::copy(compile("threads", "threads-O2-pie", O2_PIE), &exe).unwrap();
    let space = load_space(pid);
    let m = space
        .mappings
        .iter()
        .find(|m| m.path.ends_with("replaced (deleted)"))
        .unwrap_or_else(|| panic!("{:?}", space.mappings));
    let img = m.image().expect("image of the deleted binary");
    assert!(img.symbol_address("level3").is_some());
    assert!(img.symbol_address("alpha").is_none());
    let s = unwind_snapshot(pid, &snapshot(pid, pid), &space);
    let n = names(&s, &space, &HashMap::new());
    assert!(
        find_run(&n, &["level3", "level2", "level1", "main"]).is_some(),
        "{n:?}"
    );
    assert_eq!(m.short_name(), "replaced");
    assert!(
        space
            .describe(s.frames[1].pc)
            .starts_with("replaced!level3+0x")
    );
}
