//! Unwinding real processes end to end: fixtures (`tests/fixtures/*.c`, `*.cpp`) compiled
//! by the test in several ways (-O0, -O2 -fomit-frame-pointer, PIE and not, stripped,
//! without CFI, C++ templates, a stripped shared library, static in a container), mostly
//! blocked in `pause()`. Each is captured by strata's own [`Capturer`] (stopped, registers
//! and stack copied, detached), must be running and untraced right after, and is unwound
//! by [`stacks::unwind_task`] from the copy layered over the live process. The result is
//! checked against the fixture's symbols and, frame for frame, against `eu-stack` run on
//! the same process afterwards (the fixtures are blocked, so their stacks do not change).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use strata_daemon::capture::{CaptureOptions, Capturer, TaskCapture, ThreadSnapshot};
use strata_daemon::images::{AddressSpace, Image, ImageCache};
use strata_daemon::memory::{ProcessMemory, Registers};
use strata_daemon::procfs::{self, Pid};
use strata_daemon::stacks::{TaskStacks, unwind_task};
use strata_daemon::unwind::{
    FrameKind, KnownRegs, Recovery, UnwoundStack, WalkEnd, registers_from_sigframe, unwind,
};

#[path = "../../tests/support/target.rs"]
mod target;

use target::{Target, assert_free, compile};

const MAX_FRAMES: usize = 256;

/// Starts a fixture and waits until it has printed `ready` and its only thread sleeps
/// (blocked in `pause()`): a capture right after `ready` could catch it between the write
/// and the pause, and its stack would then differ from eu-stack's a moment later.
fn blocked(exe: &Path, args: &[&str]) -> Target {
    let t = Target::start(exe, args);
    t.wait_all_sleeping(1);
    t
}

/// One capture of a task through strata's capture, and its stacks.
struct Captured {
    capture: TaskCapture,
    stacks: TaskStacks,
}

/// Captures `pid` with a capturer of its own and unwinds every thread.
fn capture(pid: Pid) -> Captured {
    capture_with(&Capturer::new(1), &ImageCache::new(), pid)
}

fn capture_with(capturer: &Capturer, cache: &ImageCache, pid: Pid) -> Captured {
    let capture = capturer
        .capture(&[pid], &CaptureOptions::default())
        .pop()
        .expect("one result per pid")
        .unwrap_or_else(|e| panic!("capture of {pid}: {e}"));
    // Unwinding happens after the detach: the target must already run, untraced.
    assert_free(pid);
    let stacks = unwind_task(&capture, cache, &ProcessMemory::new(pid), MAX_FRAMES);
    Captured { capture, stacks }
}

impl Captured {
    fn space(&self) -> &AddressSpace {
        &self.stacks.space
    }

    fn snapshot(&self, tid: Pid) -> &ThreadSnapshot {
        let t = self.capture.threads.iter().find(|t| t.info.tid == tid);
        let t = t.unwrap_or_else(|| panic!("thread {tid} not captured"));
        t.snapshot
            .as_ref()
            .unwrap_or_else(|e| panic!("thread {tid}: {e}"))
    }

    fn stack(&self, tid: Pid) -> &UnwoundStack {
        let t = self.stacks.threads.iter().find(|t| t.info.tid == tid);
        let t = t.unwrap_or_else(|| panic!("thread {tid} not unwound"));
        t.stack
            .as_ref()
            .unwrap_or_else(|e| panic!("thread {tid}: {e}"))
    }

    /// Every thread unwinds to the same frames from its stack copy alone: CFI lives in the
    /// images, and the only memory the walk reads is the stack the capture copied.
    fn assert_copy_suffices(&self) {
        for t in &self.capture.threads {
            let snap = self.snapshot(t.info.tid);
            let from_copy = unwind(&snap.regs, &snap.stack, self.space(), MAX_FRAMES);
            assert_eq!(
                &from_copy,
                self.stack(t.info.tid),
                "thread {}: the stack copy alone should suffice",
                t.info.tid
            );
        }
    }
}

/// The function name of each frame, from `twins` (an unstripped image by mapping path) or
/// the frame's own image; `?` when there is none.
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

/// The mapping path of each frame's module (`?` outside any).
fn modules(s: &UnwoundStack, space: &AddressSpace) -> Vec<String> {
    s.frames
        .iter()
        .map(|f| f.module(space).map_or("?".into(), |m| m.path.clone()))
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

/// eu-stack on the main thread of `pid`, compared with our unwind of it.
fn assert_main_matches_eu_stack(pid: Pid, s: &UnwoundStack, what: &str) {
    let eu = eu_stack(pid);
    assert_matches_eu_stack(s, &eu[&pid], what);
}

/// The index of `seq` as a contiguous run in `names`.
fn find_run(names: &[String], seq: &[&str]) -> Option<usize> {
    names
        .windows(seq.len())
        .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
}

/// The walk ended normally, the first frame is the captured one and every other a call.
fn assert_plain_calls(s: &UnwoundStack, what: &str, n: &[String]) {
    assert_eq!(s.end, WalkEnd::Outermost, "{what}: {n:?}");
    assert_eq!(s.frames[0].kind, FrameKind::Innermost);
    assert!(
        s.frames[1..].iter().all(|f| f.kind == FrameKind::Call),
        "{what}: {:?}",
        s.frames
    );
}

/// [`assert_plain_calls`], every caller recovered by CFI, and eu-stack's frames for the
/// main thread of `pid`.
fn assert_all_by_cfi_as_eu_stack(pid: Pid, s: &UnwoundStack, n: &[String], what: &str) {
    assert_plain_calls(s, what, n);
    assert!(
        s.frames[1..].iter().all(|f| f.how == Recovery::Cfi),
        "{what}: {s:?}"
    );
    assert_main_matches_eu_stack(pid, s, what);
}

/// The first `count` frames are libc's (pause and what it calls).
fn assert_first_in_libc(s: &UnwoundStack, space: &AddressSpace, count: usize, n: &[String]) {
    for f in &s.frames[..count] {
        let m = f.module(space).expect("mapped");
        assert!(m.path.contains("libc"), "{n:?}");
    }
}

/// Keys a twin image by the path its stripped counterpart is mapped under.
fn twin_of(mapped: &Path, unstripped: &Path) -> HashMap<String, Image> {
    let img = Image::parse("twin", std::fs::read(unstripped).unwrap()).unwrap();
    let path = std::fs::canonicalize(mapped).unwrap();
    HashMap::from([(path.to_string_lossy().into_owned(), img)])
}

/// Runs a `nested` build and checks main's stack: level3, level2, level1, main in order
/// right above libc's `pause`, a normal end, and eu-stack's frames. `twin` is the
/// unstripped build whose symbols name a stripped one.
fn check_nested(exe: &Path, twin: Option<&Path>, expect_how: Recovery) {
    let target = blocked(exe, &[]);
    let pid = target.pid();
    let c = capture(pid);
    c.assert_copy_suffices();
    let (s, space) = (c.stack(pid), c.space());
    let mut twins = HashMap::new();
    if let Some(twin) = twin {
        twins = twin_of(exe, twin);
        // Without the twin, the stripped binary names none of them.
        let own = names(s, space, &HashMap::new());
        assert!(!own.iter().any(|n| n == "level2"), "{own:?}");
    }
    let n = names(s, space, &twins);
    let at = find_run(&n, &["level3", "level2", "level1", "main"])
        .unwrap_or_else(|| panic!("{exe:?}: frames {n:?}, end {:?}", s.end));
    // Only libc frames (pause and what it calls) lie inside level3.
    assert_first_in_libc(s, space, at, &n);
    assert_plain_calls(s, &exe.display().to_string(), &n);
    // The frames recovered from level3's, level2's and level1's steps.
    for f in &s.frames[at + 1..at + 4] {
        assert_eq!(f.how, expect_how, "{exe:?}: {:?}", s.frames);
    }
    // A caller's rsp is its callee's CFA.
    assert_eq!(s.frames[at + 1].reg(Registers::RSP), s.frames[at].cfa);
    assert_main_matches_eu_stack(pid, s, &exe.display().to_string());
}

const O0_PIE: &[&str] = &["-O0", "-fPIE", "-pie"];
const O0_NO_PIE: &[&str] = &["-O0", "-fno-PIE", "-no-pie"];
const O2_PIE: &[&str] = &["-O2", "-fomit-frame-pointer", "-fPIE", "-pie"];
const O2_NO_PIE: &[&str] = &["-O2", "-fomit-frame-pointer", "-fno-PIE", "-no-pie"];

fn nested(name: &str, flags: &[&str]) -> PathBuf {
    compile("nested.c", name, flags)
}

#[test]
fn nested_o0_pie() {
    check_nested(&nested("nested-O0-pie", O0_PIE), None, Recovery::Cfi);
}

#[test]
fn nested_o2_omit_frame_pointer_pie() {
    check_nested(&nested("nested-O2-pie", O2_PIE), None, Recovery::Cfi);
}

#[test]
fn nested_o0_no_pie() {
    check_nested(&nested("nested-O0-nopie", O0_NO_PIE), None, Recovery::Cfi);
}

#[test]
fn nested_o2_omit_frame_pointer_no_pie() {
    check_nested(&nested("nested-O2-nopie", O2_NO_PIE), None, Recovery::Cfi);
}

#[test]
fn nested_stripped_named_by_unstripped_twin() {
    let exe = nested("nested-O2-pie-twin", O2_PIE);
    let stripped = target::strip(&exe, "nested-O2-pie-stripped", &[]);
    check_nested(&stripped, Some(&exe), Recovery::Cfi);
}

/// No CFI for the fixture's own functions: the walk goes through them by the frame
/// pointer chain (-O0 keeps rbp as frame pointer) and back to CFI in libc.
#[test]
fn nested_without_cfi_uses_frame_pointers() {
    let exe = nested(
        "nested-O0-nocfi",
        &[
            "-O0",
            "-fno-omit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    );
    check_nested(&exe, None, Recovery::FramePointer);
}

/// Where the signal tests find the handler and what it interrupted.
struct SignalStack {
    target: Target,
    captured: Captured,
    /// The index of `handler_waits`: the handler is at +1, the trampoline at +2, the
    /// interrupted `faulting` at +3 and `main` at +4.
    at: usize,
}

/// The handler's stack through the trampoline to the faulting frame, for the `signal`
/// fixture run with `args`.
fn signal_stack(args: &[&str]) -> SignalStack {
    let target = blocked(&signal_fixture(), args);
    let pid = target.pid();
    let captured = capture(pid);
    let (s, space) = (captured.stack(pid), captured.space());
    let n = names(s, space, &HashMap::new());
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
    // expressions, or by reading the ucontext for the trampoline without CFI). The
    // ucontext is on the handler's stack, so in the capture's copy.
    let sp = tramp.reg(Registers::RSP).expect("sp in the trampoline");
    let from_uc =
        registers_from_sigframe(sp, &captured.snapshot(pid).stack).expect("ucontext in the copy");
    assert_eq!(from_uc.values, interrupted.regs.values);
    SignalStack {
        target,
        captured,
        at,
    }
}

fn signal_fixture() -> PathBuf {
    compile("signal.c", "signal-O2-pie", O2_PIE)
}

#[test]
fn signal_handler_through_glibc_restore_rt() {
    let SignalStack {
        target,
        captured,
        at,
    } = signal_stack(&[]);
    captured.assert_copy_suffices();
    let s = captured.stack(target.pid());
    assert_eq!(s.frames[at + 2].how, Recovery::Cfi);
    // Recovered by __restore_rt's CFI (the S augmentation and register expressions).
    assert_eq!(s.frames[at + 3].how, Recovery::Cfi);
    assert_main_matches_eu_stack(target.pid(), s, "signal");
}

#[test]
fn signal_handler_through_trampoline_without_cfi() {
    let SignalStack {
        target,
        captured,
        at,
    } = signal_stack(&["own-restorer"]);
    captured.assert_copy_suffices();
    let pid = target.pid();
    let s = captured.stack(pid);
    assert_eq!(s.frames[at + 3].how, Recovery::SignalContext);
    // eu-stack (elfutils 0.188) finds no CFI for the trampoline, looks it up at pc - 1
    // and stops there: compare the pcs it has.
    let eu = eu_stack(pid);
    let eu = &eu[&pid];
    assert_eq!(
        eu.len(),
        at + 3,
        "eu-stack got further than expected: {eu:?}"
    );
    let ours: Vec<u64> = s.frames[..at + 3].iter().map(|f| f.pc).collect();
    let theirs: Vec<u64> = eu.iter().map(|f| f.0).collect();
    assert_eq!(ours, theirs);
}

/// The mapping of `maps` holding `addr`, by path (`""` for an anonymous one).
fn mapping_path(c: &TaskCapture, addr: u64) -> Option<&str> {
    c.maps
        .iter()
        .find(|m| m.start <= addr && addr < m.end)
        .map(|m| m.path.as_str())
}

/// The handler runs on an alternate signal stack (an anonymous mapping of its own), the
/// code it interrupted on the main stack. The capture copies only the stack SP is on, so
/// the frames past the interrupted one come from live memory (the layered reader of
/// `unwind_task`); from the copy alone the walk ends right after the interrupted frame.
#[test]
fn signal_handler_on_an_alternate_stack() {
    let SignalStack {
        target,
        captured,
        at,
    } = signal_stack(&["alt-stack"]);
    let pid = target.pid();
    let (s, space) = (captured.stack(pid), captured.space());
    let snap = captured.snapshot(pid);
    // The premise: the handler's sp is on the alternate stack (not [stack]), the
    // interrupted frame's on [stack], outside the copy.
    let handler_sp = snap.regs.sp();
    let interrupted_sp = s.frames[at + 3].reg(Registers::RSP).expect("sp");
    assert_eq!(mapping_path(&captured.capture, handler_sp), Some(""));
    assert_eq!(
        mapping_path(&captured.capture, interrupted_sp),
        Some("[stack]")
    );
    assert!(!snap.stack.contains(interrupted_sp, 8));
    // All plain calls on the main stack went by CFI, found in live memory.
    assert!(s.frames[at + 4..].iter().all(|f| f.how == Recovery::Cfi));
    assert_main_matches_eu_stack(pid, s, "sigaltstack");
    // From the copy alone: the same frames up to the interrupted one (its registers come
    // from the ucontext on the alternate stack), then no return address to read.
    let from_copy = unwind(&snap.regs, &snap.stack, space, MAX_FRAMES);
    let pcs = |s: &UnwoundStack| s.frames.iter().map(|f| (f.pc, f.kind)).collect::<Vec<_>>();
    assert_eq!(pcs(&from_copy), pcs(s)[..at + 4], "{:?}", from_copy.end);
    assert!(
        matches!(&from_copy.end, WalkEnd::Error(e) if e.to_string().contains("return address")),
        "{:?}",
        from_copy.end
    );
}

#[test]
fn every_thread_of_a_threaded_process() {
    let exe = compile("threads.c", "threads-O2-pie", O2_PIE);
    // Three threads print `ready`; main blocks in pthread_join.
    let target = Target::start_ready(&exe, &[], 3);
    target.wait_all_sleeping(4);
    let pid = target.pid();
    let c = capture(pid);
    c.assert_copy_suffices();
    assert_eq!(c.capture.threads.len(), 4);
    let eu = eu_stack(pid);
    let expected: [&[&str]; 3] = [
        &["block", "alpha_inner", "alpha", "run_alpha"],
        &["block", "beta_inner2", "beta_inner1", "beta", "run_beta"],
        &["block", "gamma_inner", "gamma_", "run_gamma"],
    ];
    let mut found = [0; 3];
    for t in &c.capture.threads {
        let tid = t.info.tid;
        let s = c.stack(tid);
        let n = names(s, c.space(), &HashMap::new());
        assert_eq!(s.end, WalkEnd::Outermost, "thread {tid}: {n:?}");
        assert_matches_eu_stack(s, &eu[&tid], &format!("thread {tid}"));
        if tid == pid {
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

/// C++ at -O2: std::sort's comparator, std::for_each's lambda and the class template's
/// members are inlined into `Sorter<int>::run`, which calls the blocking function from
/// inside the inlined lambda. The physical frames, by their (mangled) symbols, from the
/// blocking function out to main, all by CFI, and eu-stack's frames.
#[test]
fn cpp_o2_with_inlined_templates() {
    let exe = compile("templates.cpp", "templates-O2", &["-O2", "-g"]);
    let target = blocked(&exe, &[]);
    let pid = target.pid();
    let c = capture(pid);
    c.assert_copy_suffices();
    let (s, space) = (c.stack(pid), c.space());
    let n = names(s, space, &HashMap::new());
    let at = find_run(&n, &["block_in_template", "_ZN6SorterIiE3runEi", "main"])
        .unwrap_or_else(|| panic!("frames {n:?}, end {:?}", s.end));
    assert_first_in_libc(s, space, at, &n);
    assert_all_by_cfi_as_eu_stack(pid, s, &n, "templates");
}

/// A program linked against a library of its own that is stripped of everything but its
/// dynamic symbols: the blocking call is in a static function of the library, which only
/// the unstripped twin names. The walk crosses the library by its .eh_frame.
#[test]
fn stripped_shared_library() {
    let full = compile(
        "blocklib.c",
        "libblocklib-unstripped.so",
        &["-O2", "-fPIC", "-shared"],
    );
    let lib = target::strip(&full, "libblocklib.so", &["--strip-all"]);
    let dir = lib.parent().expect("build dir").display().to_string();
    let exe = target::compile_linked(
        "uses_lib.c",
        "uses_lib-O2",
        &["-O2"],
        &[
            &format!("-L{dir}"),
            "-lblocklib",
            &format!("-Wl,-rpath,{dir}"),
        ],
    );
    let target = blocked(&exe, &[]);
    let pid = target.pid();
    let c = capture(pid);
    c.assert_copy_suffices();
    let (s, space) = (c.stack(pid), c.space());
    let lib_image = space
        .mappings
        .iter()
        .find(|m| m.path.ends_with("/libblocklib.so"))
        .and_then(|m| m.image())
        .unwrap_or_else(|| panic!("libblocklib.so not loaded: {:?}", space.mappings));
    assert!(!lib_image.has_symtab, "the library should be stripped");
    assert!(lib_image.eh_frame.is_some());
    let n = names(s, space, &twin_of(&lib, &full));
    let at = find_run(&n, &["lib_inner", "lib_outer", "app_caller", "main"])
        .unwrap_or_else(|| panic!("frames {n:?}, end {:?}", s.end));
    // By its own symbols, the stripped library names only its exported function.
    let own = names(s, space, &HashMap::new());
    assert_eq!(own[at..at + 3], ["?", "lib_outer", "app_caller"], "{own:?}");
    let mods = modules(s, space);
    assert!(mods[at].ends_with("/libblocklib.so") && mods[at + 1] == mods[at]);
    // Out of lib_inner and lib_outer (and everything else) by CFI.
    assert_all_by_cfi_as_eu_stack(pid, s, &n, "stripped library");
}

/// The main thread spins calling clock_gettime(CLOCK_MONOTONIC). Captured repeatedly
/// until it was stopped inside the vdso a few times; every capture, wherever it stopped
/// (vdso, libc, the loop itself), must unwind to main. The vdso's image comes from the
/// process's memory. eu-stack cannot be compared: the thread runs between captures.
#[test]
fn thread_stopped_in_the_vdso() {
    let exe = compile("vdso_spin.c", "vdso_spin-O2-pie", O2_PIE);
    let target = Target::start(&exe, &[]);
    let pid = target.pid();
    let (capturer, cache) = (Capturer::new(1), ImageCache::new());
    let (mut in_vdso, mut tries) = (Vec::new(), 0);
    while in_vdso.len() < 3 && tries < 400 {
        tries += 1;
        let c = capture_with(&capturer, &cache, pid);
        c.assert_copy_suffices();
        let (s, space) = (c.stack(pid), c.space());
        let n = names(s, space, &HashMap::new());
        let mods = modules(s, space);
        let at = find_run(&n, &["spin_in_vdso", "main"])
            .unwrap_or_else(|| panic!("try {tries}: {n:?} in {mods:?}, end {:?}", s.end));
        assert_plain_calls(s, "vdso_spin", &n);
        if mods[0] != "[vdso]" {
            continue;
        }
        // Out of the vdso into libc's clock_gettime, then the caller.
        assert!(
            mods[1..at].iter().all(|m| m.contains("libc")) && at >= 2,
            "{n:?} in {mods:?}"
        );
        assert_eq!(s.frames[1].how, Recovery::Cfi, "out of the vdso by its CFI");
        in_vdso.push(s.frames[0].pc);
    }
    assert!(
        !in_vdso.is_empty(),
        "never stopped in the vdso in {tries} captures"
    );
    eprintln!(
        "stopped in the vdso {} times of {tries}, at {in_vdso:x?}",
        in_vdso.len()
    );
}

/// A process in a "container": a private mount namespace whose root (by pivot_root) is a
/// tmpfs holding only a static `nested` build, run as `/prog`. The path in its maps names
/// nothing on the host: its image can only be read through /proc/PID/map_files or
/// /proc/PID/root. (A plain chroot would not do: /proc/PID/maps prints paths relative to
/// the reader's root, so the host would see the real path.)
struct Container {
    target: Target,
    _dir: tempfile::TempDir,
}

fn start_in_container() -> Container {
    let exe = compile("nested.c", "nested-static", &["-O2", "-static"]);
    let dir = tempfile::tempdir().unwrap();
    let script = r#"mount -t tmpfs strata-test "$1" && cp "$2" "$1/prog" && mkdir "$1/old" &&
        cd "$1" && pivot_root . old && exec /prog"#;
    let (d, e) = (dir.path().to_str().unwrap(), exe.to_str().unwrap());
    let args = [
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        d,
        e,
    ];
    let target = blocked(Path::new("unshare"), &args);
    let maps = procfs::maps(target.pid()).unwrap();
    assert!(
        maps.iter().any(|m| m.is_executable() && m.path == "/prog"),
        "{maps:?}"
    );
    assert!(!Path::new("/prog").exists(), "/prog exists on this host");
    Container { target, _dir: dir }
}

/// The stack of the static fixture: every frame in `/prog`, named by its own symbols.
fn check_container_stack(s: &UnwoundStack, space: &AddressSpace) {
    let n = names(s, space, &HashMap::new());
    assert!(
        find_run(&n, &["level3", "level2", "level1", "main"]).is_some(),
        "{n:?}, end {:?}",
        s.end
    );
    assert!(modules(s, space).iter().all(|m| m == "/prog"), "{n:?}");
    assert_plain_calls(s, "container", &n);
}

#[test]
fn process_in_a_container_is_unwound_through_proc() {
    let container = start_in_container();
    let pid = container.target.pid();
    let c = capture(pid);
    c.assert_copy_suffices();
    check_container_stack(c.stack(pid), c.space());
    // eu-stack opens the path from the maps and fails on this process: nothing to compare.
}

/// Drops capabilities from the calling thread's effective set (capabilities are
/// per-thread) and raises them again on Drop.
struct WithoutCaps(Vec<caps::Capability>);

impl WithoutCaps {
    fn drop_caps(which: &[caps::Capability]) -> WithoutCaps {
        for &cap in which {
            caps::drop(None, caps::CapSet::Effective, cap).expect("drop capability");
        }
        WithoutCaps(which.to_vec())
    }
}

impl Drop for WithoutCaps {
    fn drop(&mut self) {
        for &cap in &self.0 {
            let _ = caps::raise(None, caps::CapSet::Effective, cap);
        }
    }
}

/// Opening /proc/PID/map_files/* needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, which a
/// daemon may well not have. Without them (dropped for this thread, which loads the
/// images; the capture's own threads keep theirs), the image must come through
/// /proc/PID/root, the only other way to the container's `/prog`.
#[test]
fn container_image_loads_through_proc_root_without_map_files() {
    let container = start_in_container();
    let pid = container.target.pid();
    let capture = Capturer::new(1)
        .capture(&[pid], &CaptureOptions::default())
        .pop()
        .unwrap()
        .unwrap();
    assert_free(pid);
    let _no_admin = WithoutCaps::drop_caps(&[
        caps::Capability::CAP_SYS_ADMIN,
        caps::Capability::CAP_CHECKPOINT_RESTORE,
    ]);
    let exe_map = capture
        .maps
        .iter()
        .find(|m| m.is_executable() && m.path == "/prog")
        .unwrap();
    // The premise: map_files is refused now, and the root path works.
    let map_file = format!(
        "/proc/{pid}/map_files/{:x}-{:x}",
        exe_map.start, exe_map.end
    );
    let refused = File::open(&map_file).expect_err("map_files should be refused");
    assert_eq!(refused.raw_os_error(), Some(libc::EPERM), "{refused}");
    assert!(File::open(format!("/proc/{pid}/root/prog")).is_ok());
    let stacks = unwind_task(
        &capture,
        &ImageCache::new(),
        &ProcessMemory::new(pid),
        MAX_FRAMES,
    );
    let img = stacks
        .space
        .mappings
        .iter()
        .find(|m| m.path == "/prog")
        .and_then(|m| m.image())
        .unwrap_or_else(|| panic!("/prog not loaded: {:?}", stacks.space.mappings));
    assert!(img.symbol_address("level3").is_some());
    let s = stacks.threads[0].stack.as_ref().unwrap();
    check_container_stack(s, &stacks.space);
}

/// Rough cost of one unwind (printed; run with --nocapture), bounded loosely so that a
/// regression to re-parsing images per call fails.
#[test]
fn unwinding_is_cheap() {
    let target = blocked(&nested("nested-O2-pie", O2_PIE), &[]);
    let pid = target.pid();
    let c = capture(pid);
    let snap = c.snapshot(pid);
    let first = unwind(&snap.regs, &snap.stack, c.space(), MAX_FRAMES);
    assert_eq!(first.end, WalkEnd::Outermost);
    let runs = 2000;
    let t = Instant::now();
    for _ in 0..runs {
        let s = unwind(&snap.regs, &snap.stack, c.space(), MAX_FRAMES);
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
    let built = nested("nested-O2-pie", O2_PIE);
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("replaced");
    std::fs::copy(&built, &exe).unwrap();
    let target = blocked(&exe, &[]);
    let pid = target.pid();
    std::fs::remove_file(&exe).unwrap();
    std::fs::copy(compile("threads.c", "threads-O2-pie", O2_PIE), &exe).unwrap();
    let c = capture(pid);
    c.assert_copy_suffices();
    let space = c.space();
    let m = space
        .mappings
        .iter()
        .find(|m| m.path.ends_with("replaced (deleted)"))
        .unwrap_or_else(|| panic!("{:?}", space.mappings));
    let img = m.image().expect("image of the deleted binary");
    assert!(img.symbol_address("level3").is_some());
    assert!(img.symbol_address("alpha").is_none());
    let s = c.stack(pid);
    let n = names(s, space, &HashMap::new());
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
