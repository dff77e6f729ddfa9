//! The tree network's links over real gRPC on loopback: the real parent end
//! (`strata_commnode::children::Children`) against hand-made clients that break the
//! handshake in every way we know of (wrong key, no proof, replay, a taken or foreign place
//! in the tree, garbage and oversized messages), the real child end
//! (`strata_proto::link::connect`), and the real `strata daemon` process holding a target
//! and reading its memory. Nothing under test is mocked.
//!
//! Timeouts are generous (the machine is shared) and no assertion is about time: a wait
//! that runs out means the thing waited for did not happen.

mod support;
#[path = "support/target.rs"]
mod target;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::ops::Range;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata_commnode::children::{Answer, Children};
use strata_daemon::agent::rank_map;
use strata_daemon::discovery::{self, Selector};
use strata_proto::Message;
use strata_proto::auth::{SessionKey, nonce};
use strata_proto::link::{self, LinkError, MAX_MESSAGE, ParentLink, send_reply};
use strata_proto::overlay::{
    Challenge, Command, Detach, Done, Down, ErrorKind, Heartbeat, Hello, Hold, HoldReply, PidList,
    Proof, ReadMemory, ReadMemoryReply, Release, ReplyChunk, Role, Setup, SetupReply, Shutdown, Up,
    command::Action, down, setup, up,
};
use strata_proto::service::overlay_client::OverlayClient;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;
use tonic::{Code, Status, Streaming};

use target::{Target, assert_free, thread_ids, thread_state, tracer};

/// Longest any single step may take before the test calls it a failure.
const PATIENCE: Duration = Duration::from_secs(60);

fn deadline() -> Instant {
    Instant::now() + PATIENCE
}

// ----- The parent end ------------------------------------------------------------------

/// A `Children` server on a free loopback port, and the lines it logged.
struct Parent {
    children: Children,
    log: Arc<Mutex<Vec<String>>>,
}

impl Parent {
    async fn start(key: &SessionKey, role: Role, expected: Range<u32>) -> Parent {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let children = Children::listen(
            "127.0.0.1:0".parse().unwrap(),
            key.clone(),
            role,
            expected,
            Arc::new(|i| format!("child {i}")),
            Arc::new(move |line: String| sink.lock().unwrap().push(line)),
        )
        .await
        .expect("the parent listens");
        Parent { children, log }
    }

    fn addr(&self) -> SocketAddr {
        self.children.addr()
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a "refused" line containing `reason` is logged; returns that line.
    async fn refusal(&self, reason: &str) -> String {
        let end = deadline();
        loop {
            if let Some(l) = self
                .log()
                .into_iter()
                .find(|l| l.starts_with("refused a connection from ") && l.contains(reason))
            {
                return l;
            }
            assert!(
                Instant::now() < end,
                "no refusal for '{reason}' was logged; the log: {:?}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Lets the parent take in what its links reported so far (joins, departures) without
    /// waiting for anyone in particular, and returns the joined children.
    async fn settle(&mut self) -> Vec<u32> {
        let until = Instant::now() + Duration::from_millis(300);
        self.children.wait_joined(until, |_| {}).await;
        self.children.joined()
    }

    /// Waits until `n` children have joined.
    async fn wait_joined(&mut self, n: usize) {
        let joined = self.children.wait_joined(deadline(), |_| {}).await;
        assert_eq!(
            joined,
            n,
            "joined: {:?}, log: {:?}",
            self.children.joined(),
            self.log()
        );
    }

    /// One command round, every answer in index order.
    async fn round(&mut self, id: u64, action: Action) -> Vec<(u32, Answer)> {
        let command = Command {
            id,
            timeout_ms: PATIENCE.as_millis() as u64,
            action: Some(action),
        };
        self.children
            .round(&command, deadline(), false, |_, _| {})
            .await
    }

    /// A `Detach` round: every child in `expected` answers `Done` from one daemon.
    async fn detach_round_works(&mut self, id: u64, expected: &[u32]) {
        let answers = self.round(id, Action::Detach(Detach {})).await;
        let got: Vec<u32> = answers.iter().map(|(i, _)| *i).collect();
        assert_eq!(got, expected, "answers: {answers:?}");
        for (i, a) in answers {
            let bytes = a.unwrap_or_else(|e| panic!("child {i} did not answer: {e}"));
            let done = Done::decode(bytes.as_slice()).expect("a Done");
            assert_eq!(done.daemons, 1, "child {i}'s own Done");
        }
    }
}

// ----- Children ------------------------------------------------------------------------

/// A well-behaved child made of the real child end: it answers `Detach` with `Done` and
/// ends on `Shutdown` (or when the link ends).
fn legit_child(
    addr: SocketAddr,
    key: &SessionKey,
    role: Role,
    index: u32,
) -> tokio::task::JoinHandle<Result<(), LinkError>> {
    let key = key.clone();
    tokio::spawn(async move {
        let ParentLink { up, mut down } =
            link::connect(&addr.to_string(), &key, role, index).await?;
        while let Some(kind) = link::next_down(&mut down).await {
            let down::Kind::Command(cmd) = kind else {
                continue;
            };
            let done = Done {
                daemons: 1,
                missing: vec![],
            };
            let last = matches!(cmd.action, Some(Action::Shutdown(_)));
            if send_reply(&up, cmd.id, &done).await.is_err() || last {
                break;
            }
        }
        Ok(())
    })
}

/// A hand-made client: the raw `Link` stream, driven message by message.
struct Raw {
    up: mpsc::Sender<Up>,
    down: Streaming<Down>,
}

impl Raw {
    async fn open(addr: SocketAddr) -> Raw {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .expect("connect to the parent");
        let mut client = OverlayClient::new(channel).max_decoding_message_size(MAX_MESSAGE);
        let (up, rx) = mpsc::channel::<Up>(8);
        let down = client
            .link(ReceiverStream::new(rx))
            .await
            .expect("the parent opens the stream")
            .into_inner();
        Raw { up, down }
    }

    async fn send(&self, kind: up::Kind) {
        // The parent may already have ended the stream: what it answers tells.
        let _ = self.up.send(Up { kind: Some(kind) }).await;
    }

    /// The next message down that is not a heartbeat: `Ok(None)` when the stream ended
    /// cleanly, `Err` with the parent's status when it ended with one.
    async fn next(&mut self) -> Result<Option<down::Kind>, Status> {
        loop {
            let m = tokio::time::timeout(PATIENCE, self.down.message())
                .await
                .expect("the parent said something within the patience limit")?;
            match m {
                None => return Ok(None),
                Some(Down {
                    kind: Some(down::Kind::Heartbeat(_)),
                }) => continue,
                Some(Down { kind }) => return Ok(kind),
            }
        }
    }

    async fn challenge(&mut self) -> Challenge {
        match self.next().await {
            Ok(Some(down::Kind::Challenge(c))) => c,
            other => panic!("expected a challenge, got {other:?}"),
        }
    }

    /// The stream ends with the parent's refusal: its status message.
    async fn refused(&mut self) -> String {
        match self.next().await {
            Err(s) => {
                assert_eq!(s.code(), Code::PermissionDenied, "{s:?}");
                s.message().to_string()
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

fn hello(role: Role, index: u32) -> Hello {
    Hello {
        protocol_version: strata_proto::PROTOCOL_VERSION,
        role: role as i32,
        index,
        nonce: nonce(),
        host: "test-host".into(),
        pid: std::process::id(),
    }
}

fn key() -> SessionKey {
    SessionKey::generate().expect("a key")
}

// ----- 1. Keys ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_refused_both_ways_and_the_right_key_joins() {
    let (a, b) = (key(), key());
    let mut parent = Parent::start(&a, Role::Daemon, 0..1).await;

    // The child holds key B: the parent's proof (made with A) does not verify.
    let e = link::connect(&parent.addr().to_string(), &b, Role::Daemon, 0)
        .await
        .expect_err("a parent with another key is not ours");
    assert!(matches!(e, LinkError::BadParent { .. }), "{e:?}");

    // A child with key B that goes on anyway: its proof does not verify on the parent.
    let mut raw = Raw::open(parent.addr()).await;
    let h = hello(Role::Daemon, 0);
    raw.send(up::Kind::Hello(h.clone())).await;
    let c = raw.challenge().await;
    assert!(
        !b.verify_parent(&h, &c.nonce, &c.mac),
        "B cannot verify A's proof"
    );
    raw.send(up::Kind::Proof(Proof {
        mac: b.child_proof(&h, &c.nonce),
    }))
    .await;
    assert_eq!(raw.refused().await, "wrong session key");
    parent.refusal("wrong session key").await;
    assert!(parent.settle().await.is_empty(), "a wrong key joined");

    // Key A joins.
    let child = legit_child(parent.addr(), &a, Role::Daemon, 0);
    parent.wait_joined(1).await;
    assert_eq!(parent.children.joined(), [0]);
    let h = parent.children.hello(0).expect("its hello");
    assert_eq!(h.pid, std::process::id());
    parent.detach_round_works(1, &[0]).await;
    parent.children.shutdown_all();
    child.await.unwrap().expect("the child's link");
}

// ----- 2. No secret ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_without_the_secret_never_joins_and_the_parent_keeps_working() {
    let k = key();
    let mut parent = Parent::start(&k, Role::Daemon, 0..1).await;

    // Hello, then a proof with an empty mac.
    let mut empty = Raw::open(parent.addr()).await;
    empty.send(up::Kind::Hello(hello(Role::Daemon, 0))).await;
    empty.challenge().await;
    empty.send(up::Kind::Proof(Proof { mac: vec![] })).await;
    assert_eq!(empty.refused().await, "wrong session key");

    // Hello, then something else than a proof.
    let mut other = Raw::open(parent.addr()).await;
    other.send(up::Kind::Hello(hello(Role::Daemon, 0))).await;
    other.challenge().await;
    other.send(up::Kind::Heartbeat(Heartbeat {})).await;
    other
        .send(up::Kind::Reply(ReplyChunk {
            command: 1,
            data: vec![1, 2, 3],
            more: false,
        }))
        .await;
    assert_eq!(other.refused().await, "no proof after the challenge");

    // Hello, then the stream closes.
    let mut closed = Raw::open(parent.addr()).await;
    closed.send(up::Kind::Hello(hello(Role::Daemon, 0))).await;
    closed.challenge().await;
    drop(closed.up);
    parent.refusal("connection closed").await;

    // Hello, then silence: held open while a legitimate child joins and works, so a
    // stalled handshake blocks no one; refused once the handshake timeout passes.
    let mut silent = Raw::open(parent.addr()).await;
    silent.send(up::Kind::Hello(hello(Role::Daemon, 0))).await;
    silent.challenge().await;

    assert!(
        parent.settle().await.is_empty(),
        "a child without the key joined"
    );
    let child = legit_child(parent.addr(), &k, Role::Daemon, 0);
    parent.wait_joined(1).await;
    parent.detach_round_works(7, &[0]).await;

    assert!(silent.refused().await.starts_with("silent for"));
    parent.refusal("silent for").await;
    assert_eq!(parent.settle().await, [0], "only the legitimate child");
    parent.detach_round_works(8, &[0]).await;
    parent.children.shutdown_all();
    child.await.unwrap().expect("the child's link");
}

// ----- 3. Replay and a taken place --------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_handshake_and_a_taken_index_are_refused() {
    let k = key();
    let mut parent = Parent::start(&k, Role::Daemon, 0..1).await;
    // Another parent of the same session, where index 0 is still free.
    let mut sibling = Parent::start(&k, Role::Daemon, 0..1).await;

    // A legitimate hand-made child: its hello and proof are recorded.
    let mut first = Raw::open(parent.addr()).await;
    let recorded_hello = hello(Role::Daemon, 0);
    first.send(up::Kind::Hello(recorded_hello.clone())).await;
    let c1 = first.challenge().await;
    assert!(k.verify_parent(&recorded_hello, &c1.nonce, &c1.mac));
    let recorded_proof = Proof {
        mac: k.child_proof(&recorded_hello, &c1.nonce),
    };
    first.send(up::Kind::Proof(recorded_proof.clone())).await;
    parent.wait_joined(1).await;
    assert_eq!(parent.children.joined(), [0]);

    // The same hello and proof on a new stream, to both parents: the parent's nonce
    // differs, so the proof does not verify (refused for the key, not for the index).
    for p in [&parent, &sibling] {
        let mut replay = Raw::open(p.addr()).await;
        replay.send(up::Kind::Hello(recorded_hello.clone())).await;
        let c2 = replay.challenge().await;
        replay.send(up::Kind::Proof(recorded_proof.clone())).await;
        assert_eq!(replay.refused().await, "wrong session key");
        p.refusal("wrong session key").await;
        assert_ne!(c1.nonce, c2.nonce, "a fresh nonce per connection");
    }
    assert!(sibling.settle().await.is_empty(), "the replay joined");

    // A second child claiming index 0, with the right key, is refused.
    let mut second = Raw::open(parent.addr()).await;
    let h = hello(Role::Daemon, 0);
    second.send(up::Kind::Hello(h.clone())).await;
    let c = second.challenge().await;
    second
        .send(up::Kind::Proof(Proof {
            mac: k.child_proof(&h, &c.nonce),
        }))
        .await;
    assert_eq!(second.refused().await, "index 0 is already connected");
    parent.refusal("index 0 is already connected").await;

    // The real child end claiming it: connect fails with the parent's reason.
    let e = link::connect(&parent.addr().to_string(), &k, Role::Daemon, 0)
        .await
        .expect_err("a taken place");
    assert!(
        matches!(&e, LinkError::Refused { reason, .. } if reason == "index 0 is already connected"),
        "{e:?}"
    );

    // The first child is still the one in place, and it answers.
    assert_eq!(parent.settle().await, [0]);
    let command = tokio::spawn(async move {
        let r = parent.round(3, Action::Detach(Detach {})).await;
        (parent, r)
    });
    let id = match first.next().await {
        Ok(Some(down::Kind::Command(c))) => c.id,
        other => panic!("expected the command, got {other:?}"),
    };
    assert_eq!(id, 3);
    let done = Done {
        daemons: 1,
        missing: vec![],
    };
    first
        .send(up::Kind::Reply(ReplyChunk {
            command: id,
            data: done.encode_to_vec(),
            more: false,
        }))
        .await;
    let (_parent, answers) = command.await.unwrap();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, 0);
    let bytes = answers[0].1.clone().expect("the first child answered");
    assert_eq!(Done::decode(bytes.as_slice()).unwrap(), done);
}

// ----- 4. Garbage, oversized, and the wrong place ----------------------------------------

/// Writes `bytes` to the parent's port on a raw TCP connection, then reads until the parent
/// closes it. Returns whether it did close it.
async fn raw_tcp(addr: SocketAddr, bytes: Vec<u8>) -> bool {
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        // The parent may reset the connection mid-write: that is fine.
        let _ = s.write_all(&bytes);
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return false;
                }
                Err(_) => return true,
            }
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_oversized_messages_and_wrong_places_are_refused_and_the_parent_survives() {
    let k = key();
    let mut parent = Parent::start(&k, Role::Daemon, 0..2).await;
    let addr = parent.addr();

    // Random bytes, and an HTTP/2 preface followed by junk, several connections at once.
    let mut junk = Vec::new();
    for i in 0..8 {
        let mut random = nonce();
        random.extend(nonce().iter().cycle().take(4000 + i * 1000));
        let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        preface.extend(nonce().iter().cycle().take(4000 + i * 100));
        junk.push(tokio::spawn(raw_tcp(addr, random)));
        junk.push(tokio::spawn(raw_tcp(addr, preface)));
    }
    for j in junk {
        assert!(j.await.unwrap(), "the parent closes a garbage connection");
    }

    // A hello larger than a link's largest message.
    let mut big = Raw::open(addr).await;
    let mut h = hello(Role::Daemon, 0);
    h.host = "x".repeat(5 << 20);
    assert!(h.encoded_len() > MAX_MESSAGE);
    big.send(up::Kind::Hello(h)).await;
    let reason = big.refused().await;
    assert!(reason.contains("over the size limit"), "{reason}");
    parent.refusal("over the size limit").await;

    // The wrong role, an index outside the expected range, another protocol version, a
    // short nonce, and a first message that is not a hello: no challenge, a refusal.
    let commnode = hello(Role::Commnode, 0);
    let mut unknown_role = hello(Role::Daemon, 0);
    unknown_role.role = 77;
    let outside = hello(Role::Daemon, 2);
    let mut far = hello(Role::Daemon, 0);
    far.index = u32::MAX;
    let mut version = hello(Role::Daemon, 0);
    version.protocol_version = strata_proto::PROTOCOL_VERSION + 1;
    let mut short = hello(Role::Daemon, 0);
    short.nonce.truncate(8);
    let cases = [
        (up::Kind::Hello(commnode), "role 2 where Daemons connect"),
        (
            up::Kind::Hello(unknown_role),
            "role 77 where Daemons connect",
        ),
        (
            up::Kind::Hello(outside),
            "index 2 is not a child of this node (0..2)",
        ),
        (up::Kind::Hello(far), "is not a child of this node"),
        (up::Kind::Hello(version), "protocol version 2"),
        (up::Kind::Hello(short), "malformed hello (nonce)"),
        (
            up::Kind::Proof(Proof { mac: vec![0; 32] }),
            "its first message was not a hello",
        ),
    ];
    for (first, reason) in cases {
        let mut raw = Raw::open(addr).await;
        raw.send(first).await;
        let got = raw.refused().await;
        assert!(got.contains(reason), "'{got}' should say '{reason}'");
        parent.refusal(reason).await;
    }
    // The real child end in the wrong role is refused too.
    let e = link::connect(&addr.to_string(), &k, Role::Commnode, 0)
        .await
        .expect_err("a commnode among daemons");
    assert!(
        matches!(&e, LinkError::Refused { reason, .. } if reason.contains("role")),
        "{e:?}"
    );

    // After all that, legitimate children join and answer.
    assert!(parent.settle().await.is_empty());
    let child = legit_child(addr, &k, Role::Daemon, 0);
    // Child 1 is admitted, then sends a reply chunk larger than a link's largest message:
    // it is dropped, and child 0 is unaffected.
    let mut rogue = Raw::open(addr).await;
    let h = hello(Role::Daemon, 1);
    rogue.send(up::Kind::Hello(h.clone())).await;
    let c = rogue.challenge().await;
    rogue
        .send(up::Kind::Proof(Proof {
            mac: k.child_proof(&h, &c.nonce),
        }))
        .await;
    parent.wait_joined(2).await;
    assert_eq!(parent.children.joined(), [0, 1]);
    rogue
        .send(up::Kind::Reply(ReplyChunk {
            command: 5,
            data: vec![7; 5 << 20],
            more: false,
        }))
        .await;
    let answers = parent.round(5, Action::Detach(Detach {})).await;
    assert_eq!(answers.len(), 2);
    let done = answers[0].1.clone().expect("child 0 answers");
    assert_eq!(Done::decode(done.as_slice()).unwrap().daemons, 1);
    let lost = answers[1]
        .1
        .clone()
        .expect_err("the oversized reply is refused");
    assert!(lost.to_string().contains("over the size limit"), "{lost}");
    assert_eq!(parent.children.gone(), [1]);
    assert_eq!(parent.children.joined(), [0]);
    // The next round still works, child 1 reported with why it left.
    let answers = parent.round(6, Action::Detach(Detach {})).await;
    assert!(answers[0].1.is_ok(), "{answers:?}");
    assert_eq!(answers[1].1, Err(lost));

    parent.children.shutdown_all();
    child.await.unwrap().expect("the child's link");
}

// ----- 5. The real daemon: hold, read memory, release, shut down ----------------------------

/// A `strata daemon` process, killed and reaped on Drop if still running.
struct Daemon(Child);

impl Daemon {
    fn start(parent: SocketAddr, key: &SessionKey) -> Daemon {
        let child = std::process::Command::new(support::strata_bin())
            .args(["daemon", "--parents", &parent.to_string()])
            .args(["--daemons", "1", "--index", "0"])
            .env("STRATA_SESSION_KEY", key.to_hex())
            .env("STRATA_ROLE", "daemon")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("strata daemon starts");
        Daemon(child)
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    /// Waits for the daemon to exit: its exit status.
    async fn exit(&mut self) -> std::process::ExitStatus {
        let end = deadline();
        loop {
            if let Some(s) = self.0.try_wait().expect("try_wait") {
                return s;
            }
            assert!(Instant::now() < end, "the daemon did not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Where the target's executable is mapped from its first byte (its ELF header).
fn exe_mapping_start(pid: i32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("its executable");
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("its maps");
    for line in maps.lines() {
        // start-end perms offset dev inode path
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && std::path::Path::new(f[5]) == exe && f[2] == "00000000" {
            let start = f[0].split('-').next().unwrap();
            return u64::from_str_radix(start, 16).unwrap();
        }
    }
    panic!("no mapping of {} at offset 0 in:\n{maps}", exe.display());
}

fn only(answers: Vec<(u32, Answer)>) -> Vec<u8> {
    assert_eq!(answers.len(), 1, "{answers:?}");
    let (i, a) = answers.into_iter().next().unwrap();
    assert_eq!(i, 0);
    a.unwrap_or_else(|e| panic!("the daemon did not answer: {e}"))
}

fn setup(uid: u32, pid: i32) -> Action {
    Action::Setup(Setup {
        uid,
        target: Some(setup::Target::Pids(PidList {
            pids: vec![pid as u32],
        })),
        share: 0,
        debug_dirs: vec![],
        debug_cache: None,
        debug_cache_shared: false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_daemon_holds_reads_memory_releases_and_shuts_down() {
    let exe = target::compile("nested.c", "nested", &["-O2", "-g"]);
    let target = Target::start(&exe, &[]);
    let pid = target.pid();
    let k = key();
    let mut parent = Parent::start(&k, Role::Daemon, 0..1).await;
    let mut daemon = Daemon::start(parent.addr(), &k);
    parent.wait_joined(1).await;
    assert_eq!(parent.children.hello(0).unwrap().pid, daemon.pid() as u32);

    // A second daemon claiming the same place is refused, and says so: it fails.
    let second = std::process::Command::new(support::strata_bin())
        .args(["daemon", "--parents", &parent.addr().to_string()])
        .args(["--daemons", "1", "--index", "0"])
        .env("STRATA_SESSION_KEY", k.to_hex())
        .env("STRATA_ROLE", "daemon")
        .stdin(Stdio::null())
        .output()
        .expect("strata daemon runs");
    let (code, _, stderr) = support::parts(&second);
    assert_ne!(code, 0, "a refused daemon must fail; stderr: {stderr}");
    assert!(stderr.contains("index 0 is already connected"), "{stderr}");

    // Another user's uid: refused for permission, no task.
    let reply = SetupReply::decode(only(parent.round(1, setup(65534, pid)).await).as_slice())
        .expect("a SetupReply");
    let map = &reply.daemons[0];
    assert_eq!(
        map.error_kind,
        ErrorKind::PermissionDenied as i32,
        "{map:?}"
    );
    assert!(map.tasks.is_empty(), "{map:?}");

    // Our own uid: the target is rank 0.
    let uid = nix::unistd::getuid().as_raw();
    let reply = SetupReply::decode(only(parent.round(2, setup(uid, pid)).await).as_slice())
        .expect("a SetupReply");
    assert_eq!(reply.daemons.len(), 1, "{reply:?}");
    let map = &reply.daemons[0];
    assert_eq!(map.error, None, "{map:?}");
    assert_eq!(map.tasks.len(), 1, "{map:?}");
    assert_eq!((map.tasks[0].rank, map.tasks[0].pid), (0, pid as u32));
    assert_eq!(
        std::path::Path::new(&map.executables[map.tasks[0].executable as usize]),
        exe.canonicalize().unwrap()
    );

    let elf = exe_mapping_start(pid);
    let read = || {
        Action::ReadMemory(ReadMemory {
            ranks: vec![0],
            address: elf,
            length: 4,
        })
    };

    // Not held yet: a per-rank error, and the daemon carries on.
    let r = ReadMemoryReply::decode(only(parent.round(3, read()).await).as_slice()).unwrap();
    assert_eq!(r.ranks.len(), 1, "{r:?}");
    assert!(
        r.ranks[0].error.is_some() && r.ranks[0].data.is_empty(),
        "{r:?}"
    );
    assert_free(pid);

    // Hold: the daemon traces the target, which stays stopped.
    let held = HoldReply::decode(
        only(parent.round(4, Action::Hold(Hold { ranks: vec![0] })).await).as_slice(),
    )
    .unwrap();
    assert_eq!(held.ranks.len(), 1, "{held:?}");
    assert_eq!((held.ranks[0].rank, &held.ranks[0].error), (0, &None));
    for tid in thread_ids(pid) {
        let t = tracer(pid, tid).expect("traced by someone");
        assert!(
            std::path::Path::new(&format!("/proc/{}/task/{t}", daemon.pid())).exists(),
            "thread {tid} is traced by {t}, not a thread of the daemon {}",
            daemon.pid()
        );
        let state = thread_state(pid, tid);
        assert!(matches!(state, Some('t' | 'T')), "thread {tid}: {state:?}");
    }

    // Its memory: the executable's ELF header, twice (the hold lasts).
    for id in [5, 6] {
        let r = ReadMemoryReply::decode(only(parent.round(id, read()).await).as_slice()).unwrap();
        assert_eq!(r.ranks.len(), 1, "{r:?}");
        assert_eq!(r.ranks[0].error, None, "{r:?}");
        assert_eq!(r.ranks[0].data, b"\x7fELF");
    }

    // Release: running and untraced again; reading needs a new hold.
    let released =
        HoldReply::decode(only(parent.round(7, Action::Release(Release {})).await).as_slice())
            .unwrap();
    assert_eq!(released.ranks.len(), 1, "{released:?}");
    assert_eq!(released.ranks[0].error, None, "{released:?}");
    assert_free(pid);
    let r = ReadMemoryReply::decode(only(parent.round(8, read()).await).as_slice()).unwrap();
    assert!(r.ranks[0].error.is_some(), "{r:?}");

    // Shutdown: Done, and the daemon exits cleanly.
    let done = Done::decode(only(parent.round(9, Action::Shutdown(Shutdown {})).await).as_slice())
        .unwrap();
    assert_eq!(done.daemons, 1);
    let status = daemon.exit().await;
    assert!(status.success(), "the daemon exited with {status}");
    assert_free(pid);
    drop(target);
}

// ----- 6. Another user's process ---------------------------------------------------------

#[test]
fn discovery_refuses_another_users_process_by_uid() {
    let exe = target::compile("nested.c", "nested", &["-O2", "-g"]);
    let target = Target::start(&exe, &[]);
    let me = nix::unistd::getuid().as_raw();
    let other = if me == 65534 { 65533 } else { 65534 };
    let selector = Selector::Pids(vec![target.pid()]);
    let opts = |uid| discovery::Options {
        uid,
        own_step: None,
    };

    let (reply, tasks) = rank_map(0, "h", &selector, &opts(other), 0);
    let map = &reply.daemons[0];
    assert_eq!(
        map.error_kind,
        ErrorKind::PermissionDenied as i32,
        "{map:?}"
    );
    assert!(
        map.error.as_deref().unwrap_or("").contains("owned by uid"),
        "{map:?}"
    );
    assert!(map.tasks.is_empty() && tasks.is_empty(), "{map:?}");

    // The owner's uid finds it: the refusal above was about the uid.
    let (reply, tasks) = rank_map(0, "h", &selector, &opts(me), 0);
    assert_eq!(reply.daemons[0].error, None, "{reply:?}");
    assert_eq!(tasks.len(), 1);
    assert_free(target.pid());
}

// ----- 7. The real daemon reads variables ---------------------------------------------------

/// `ReadVariables` through a real daemon: the loop counter and a global of a rank stopped
/// at a known iteration (`loop_vars STOP`), a missing frame's one-line error; the rank
/// running and untraced after the read, then read again through a hold, which keeps it
/// stopped until the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_daemon_reads_variables_alone_and_through_a_hold() {
    use strata_proto::overlay::{ReadVariables, VariableRequest, VariablesReply};

    let exe = target::compile("loop_vars.c", "loop_vars", &["-O0", "-g"]);
    let stop = 6;
    let target = Target::start(&exe, &[&stop.to_string()]);
    target.wait_all_sleeping(1);
    let pid = target.pid();
    let k = key();
    let mut parent = Parent::start(&k, Role::Daemon, 0..1).await;
    let _daemon = Daemon::start(parent.addr(), &k);
    parent.wait_joined(1).await;
    let uid = nix::unistd::getuid().as_raw();
    let reply = SetupReply::decode(only(parent.round(1, setup(uid, pid)).await).as_slice())
        .expect("a SetupReply");
    assert_eq!(reply.daemons[0].tasks.len(), 1, "{reply:?}");

    let request = |function: &str, variable: &str| VariableRequest {
        function: function.into(),
        variable: variable.into(),
    };
    let read = |ranks: Vec<u32>| {
        Action::ReadVariables(ReadVariables {
            ranks,
            requests: vec![
                request("solve", "it"),
                request("solve", "phase"),
                request("get_norm", "it"),
            ],
        })
    };
    let check = |r: &VariablesReply| {
        assert_eq!(r.ranks.len(), 1, "{r:?}");
        let rank = &r.ranks[0];
        assert_eq!((rank.rank, &rank.error), (0, &None), "{r:?}");
        assert_eq!(rank.values.len(), 3, "{r:?}");
        assert_eq!(rank.values[0].integer, Some(stop), "{r:?}");
        assert_eq!(rank.values[0].function.as_deref(), Some("solve"), "{r:?}");
        assert_eq!(rank.values[1].integer, Some(stop % 4), "{r:?}");
        let missing = rank.values[2].error.as_deref().unwrap_or("");
        assert!(missing.starts_with("no frame of get_norm"), "{r:?}");
    };

    // Every rank (none named): stopped for the read and let go.
    let r = VariablesReply::decode(only(parent.round(2, read(vec![])).await).as_slice()).unwrap();
    check(&r);
    assert_free(pid);
    // A rank this daemon does not have: no entry.
    let r = VariablesReply::decode(only(parent.round(3, read(vec![7])).await).as_slice()).unwrap();
    assert!(r.ranks.is_empty(), "{r:?}");

    // Held: read at the held moment, and still held after the read.
    let held = HoldReply::decode(
        only(parent.round(4, Action::Hold(Hold { ranks: vec![0] })).await).as_slice(),
    )
    .unwrap();
    assert_eq!(held.ranks[0].error, None, "{held:?}");
    let r = VariablesReply::decode(only(parent.round(5, read(vec![0])).await).as_slice()).unwrap();
    check(&r);
    let state = thread_state(pid, pid);
    assert!(
        matches!(state, Some('t' | 'T')),
        "not held after the read: {state:?}"
    );
    let released =
        HoldReply::decode(only(parent.round(6, Action::Release(Release {})).await).as_slice())
            .unwrap();
    assert_eq!(released.ranks[0].error, None, "{released:?}");
    assert_free(pid);

    let done = Done::decode(only(parent.round(7, Action::Shutdown(Shutdown {})).await).as_slice())
        .unwrap();
    assert_eq!(done.daemons, 1);
    assert_free(pid);
}
