//! The parent's end of the links: a gRPC server that children (daemons or commnodes) connect
//! to, the handshake that admits only this session's processes at their expected places,
//! and the command round trip with a deadline. The commnode role and the front end (the
//! root of the tree) both use it.
//!
//! Every link runs in its own task: it authenticates, then forwards what the child sends as
//! `Event`s to the one owner of [`Children`], which never blocks on a child: a child that
//! closes its link, breaks it, or stays silent for [`SILENCE_LIMIT`] becomes `Gone`, and a
//! child that has not answered by the command's deadline is reported as missing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata_proto::auth::{NONCE_LEN, SessionKey, nonce};
use strata_proto::link::{
    HANDSHAKE_TIMEOUT, HEARTBEAT, MAX_MESSAGE, OversizedReply, ReplyBuffer, SILENCE_LIMIT,
};
use strata_proto::overlay::{Challenge, Command, Down, Heartbeat, Hello, Lost, Role, Up, down, up};
use strata_proto::service::overlay_server::{Overlay, OverlayServer};
use thiserror::Error;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

/// Largest reply a child may send (all chunks together).
pub const MAX_REPLY: usize = 1 << 30;

/// A link's sending half, down to the child.
type DownSender = mpsc::Sender<Result<Down, Status>>;
/// The joined children's senders, by index.
type SharedSenders = Arc<Mutex<BTreeMap<u32, DownSender>>>;
/// How a child is named in reports (`daemon 3`), shared with the link tasks.
pub type Describe = Arc<dyn Fn(u32) -> String + Send + Sync>;
/// Told of every process of the subtree declared lost while it may still live.
pub type LostHook = Arc<dyn Fn(Lost) + Send + Sync>;

/// What the link tasks tell the owner.
#[derive(Debug)]
enum Event {
    Joined {
        index: u32,
        hello: Hello,
        down: mpsc::Sender<Result<Down, Status>>,
    },
    Up {
        index: u32,
        kind: up::Kind,
    },
    Gone {
        index: u32,
        reason: NoAnswer,
    },
}

/// A connected, authenticated child.
#[derive(Debug)]
struct Link {
    hello: Hello,
    down: mpsc::Sender<Result<Down, Status>>,
}

/// One child's answer to a command: its reply bytes, or why there are none.
pub type Answer = Result<Vec<u8>, NoAnswer>;

/// Why a child has no answer to a command: its link ended or went silent, it never joined,
/// or it missed the deadline. The text is the `reason` of the child's `Missing` entry.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum NoAnswer {
    #[error("silent for {0} s")]
    Silent(u64),
    #[error("sent a message over the size limit")]
    MessageTooLarge,
    #[error("connection lost (process died or network failed)")]
    ConnectionLost,
    #[error("connection closed")]
    ConnectionClosed,
    #[error("the parent stopped")]
    ParentStopped,
    #[error("sent an oversized reply")]
    DroppedOversized,
    #[error(transparent)]
    Oversized(#[from] OversizedReply),
    #[error("its link is congested or closed")]
    Congested,
    #[error("no answer within {0} s")]
    Timeout(u64),
    #[error("connected too late")]
    TooLate,
    #[error("never connected")]
    NeverConnected,
}

/// The children of one tree node.
pub struct Children {
    role: Role,
    expected: Range<u32>,
    addr: SocketAddr,
    events: mpsc::Receiver<Event>,
    links: BTreeMap<u32, Link>,
    /// The joined children's senders, shared with [`Broadcaster`]s.
    senders: SharedSenders,
    /// Complete replies to commands not yet collected by [`Children::round`] (a command
    /// broadcast urgently while another round ran): (command, child) -> answer.
    early: HashMap<(u64, u32), Answer>,
    /// Partial replies, per (command, child).
    partial: HashMap<(u64, u32), ReplyBuffer>,
    gone: HashMap<u32, NoAnswer>,
    /// Joined after the first command: not part of the session (they missed its setup).
    late: HashSet<u32>,
    commands_sent: bool,
    describe: Describe,
    /// Set once by [`Children::on_lost`]; read by every link task.
    lost: Arc<std::sync::OnceLock<LostHook>>,
    /// Connections refused so far, and where that is said (the total, when dropped).
    refused: Arc<std::sync::atomic::AtomicU64>,
    log: Arc<dyn Fn(String) + Send + Sync>,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children")
            .field("role", &self.role)
            .field("expected", &self.expected)
            .field("addr", &self.addr)
            .field("joined", &self.links.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.server.abort();
        let refused = self.refused.load(std::sync::atomic::Ordering::Relaxed);
        if refused > REFUSALS_SHOWN {
            (self.log)(format!(
                "refused {refused} connections in all (not this session's processes)"
            ));
        }
    }
}

/// Connections in their handshake at once, at most: a flood of connections that never
/// finish one costs this node no more than this many tasks and buffers (each is dropped
/// after [`HANDSHAKE_TIMEOUT`]); beyond it a connection is refused at once, and a real
/// child tries again (its handshake takes milliseconds). Well above any fan-out strata
/// chooses, so that a whole level joining at once is never turned away.
pub const MAX_HANDSHAKES: usize = 1024;

/// Refused connections logged one by one; after these, only the 100th, 1,000th, ... is, and
/// the total when the node stops: a flood must not flood the log.
const REFUSALS_SHOWN: u64 = 10;

/// The gRPC service: admits children, one [`Admission`] per connection.
struct Door {
    admission: Admission,
    log: Arc<dyn Fn(String) + Send + Sync>,
    handshakes: Arc<tokio::sync::Semaphore>,
    refused: Arc<std::sync::atomic::AtomicU64>,
}

impl Door {
    fn refusal(&self, peer: &str, reason: &str) {
        note_refusal(&self.refused, &self.log, peer, reason);
    }
}

/// Counts a refused connection and logs it if it is one of the first, or the 10th, 100th...
fn note_refusal(
    refused: &std::sync::atomic::AtomicU64,
    log: &Arc<dyn Fn(String) + Send + Sync>,
    peer: &str,
    reason: &str,
) {
    let n = refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    if n <= REFUSALS_SHOWN {
        log(format!("refused a connection from {peer}: {reason}"));
    } else if is_power_of_ten(n) {
        log(format!(
            "refused a connection from {peer}: {reason} ({n} refused so far; not each is shown)"
        ));
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

type DownStream = Pin<Box<dyn Stream<Item = Result<Down, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Overlay for Door {
    type LinkStream = DownStream;

    async fn link(&self, request: Request<Streaming<Up>>) -> Result<Response<DownStream>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown peer".to_string(), |a| a.to_string());
        let Ok(handshake) = self.handshakes.clone().try_acquire_owned() else {
            let busy = "too many connections in their handshake at once";
            self.refusal(&peer, busy);
            return Err(Status::resource_exhausted(busy));
        };
        let ups = request.into_inner();
        let (tx, rx) = mpsc::channel::<Result<Down, Status>>(64);
        let door = self.admission.clone();
        let log = self.log.clone();
        let refused = self.refused.clone();
        tokio::spawn(async move {
            if let Err(reason) = door.run(ups, tx.clone(), handshake).await {
                note_refusal(&refused, &log, &peer, &reason);
                let _ = tx.send(Err(Status::permission_denied(reason))).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// What admitting a child needs (cloned for every connection).
#[derive(Clone)]
struct Admission {
    key: SessionKey,
    role: Role,
    expected: Range<u32>,
    events: mpsc::Sender<Event>,
    /// Indices admitted so far: a second child claiming one is refused.
    admitted: Arc<Mutex<HashSet<u32>>>,
    describe: Describe,
    lost: Arc<std::sync::OnceLock<LostHook>>,
}

impl Admission {
    /// Handshake, then forward the child's messages until its link ends. `Err` only when the
    /// child was never admitted: why, a line for the log and the child's refusal (kept a
    /// `String`: it is only ever shown, and never leaves this module as a value).
    async fn run(
        self,
        mut ups: Streaming<Up>,
        tx: mpsc::Sender<Result<Down, Status>>,
        handshake: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<(), String> {
        let hello = match next_up(&mut ups, HANDSHAKE_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?
        {
            up::Kind::Hello(h) => h,
            _ => return Err("its first message was not a hello".into()),
        };
        if hello.protocol_version != strata_proto::PROTOCOL_VERSION {
            return Err(format!(
                "protocol version {} (this strata speaks {})",
                hello.protocol_version,
                strata_proto::PROTOCOL_VERSION
            ));
        }
        if hello.role != self.role as i32 {
            return Err(format!(
                "role {} where {:?}s connect",
                hello.role, self.role
            ));
        }
        if !self.expected.contains(&hello.index) {
            return Err(format!(
                "index {} is not a child of this node ({}..{})",
                hello.index, self.expected.start, self.expected.end
            ));
        }
        if hello.nonce.len() != NONCE_LEN {
            return Err("malformed hello (nonce)".into());
        }
        let parent_nonce = nonce();
        let challenge = Challenge {
            protocol_version: strata_proto::PROTOCOL_VERSION,
            mac: self.key.parent_proof(&hello, &parent_nonce),
            nonce: parent_nonce.clone(),
        };
        tx.send(Ok(down::Kind::Challenge(challenge).into()))
            .await
            .map_err(|_| "closed during the handshake".to_string())?;
        let proof = match next_up(&mut ups, HANDSHAKE_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?
        {
            up::Kind::Proof(p) => p,
            _ => return Err("no proof after the challenge".into()),
        };
        if !self.key.verify_child(&hello, &parent_nonce, &proof.mac) {
            return Err("wrong session key".into());
        }
        if !self
            .admitted
            .lock()
            .expect("not poisoned")
            .insert(hello.index)
        {
            return Err(format!("index {} is already connected", hello.index));
        }
        let index = hello.index;
        let (host, pid) = (hello.host.clone(), hello.pid);
        drop(handshake);
        // The admission: the first message after the proof, before any command, so that a
        // refused child (above) learns it from the refusal instead of a link that just ends.
        let _ = tx.send(Ok(heartbeat())).await;
        let _ = self
            .events
            .send(Event::Joined {
                index,
                hello,
                down: tx.clone(),
            })
            .await;
        // Heartbeats down, while the link lives.
        let beating = strata_proto::link::heartbeat(tx.clone(), || Ok(heartbeat()));
        let reason = loop {
            match next_up(&mut ups, SILENCE_LIMIT).await {
                Ok(up::Kind::Heartbeat(_)) => {}
                // A commnode passes on what its subtree lost, at once: the root is waiting
                // for no command to end it.
                Ok(up::Kind::Lost(lost)) if self.role == Role::Commnode => self.tell_lost(lost),
                Ok(kind) => {
                    if self.events.send(Event::Up { index, kind }).await.is_err() {
                        break NoAnswer::ParentStopped;
                    }
                }
                Err(reason) => break reason,
            }
        };
        beating.abort();
        // Silent, not closed: the process may live on, stopped or hung, holding ranks it had
        // stopped. (A closed or broken link means it died, and the kernel let them go.)
        if matches!(reason, NoAnswer::Silent(_)) {
            self.tell_lost(Lost {
                role: self.role as i32,
                index,
                host,
                pid,
                who: (self.describe)(index),
                reason: reason.to_string(),
            });
        }
        let _ = self.events.send(Event::Gone { index, reason }).await;
        Ok(())
    }

    fn tell_lost(&self, lost: Lost) {
        if let Some(hook) = self.lost.get() {
            hook(lost);
        }
    }
}

async fn next_up(ups: &mut Streaming<Up>, within: Duration) -> Result<up::Kind, NoAnswer> {
    loop {
        match tokio::time::timeout(within, ups.message()).await {
            Err(_) => return Err(NoAnswer::Silent(within.as_secs())),
            // A killed process or a cut network: HTTP/2 reports a broken stream.
            // tonic refuses a message over the size limit with OutOfRange.
            Ok(Err(s)) if s.code() == tonic::Code::OutOfRange => {
                return Err(NoAnswer::MessageTooLarge);
            }
            Ok(Err(_)) => return Err(NoAnswer::ConnectionLost),
            Ok(Ok(None)) => return Err(NoAnswer::ConnectionClosed),
            Ok(Ok(Some(Up { kind: None }))) => continue,
            Ok(Ok(Some(Up { kind: Some(k) }))) => return Ok(k),
        }
    }
}

impl Children {
    /// Listens on `listen` (`127.0.0.1:0` picks a port) for children of `role` with
    /// indices in `expected`. `describe` names a child in reports (`daemon 3`); `log`
    /// receives one line per refused connection.
    pub async fn listen(
        listen: SocketAddr,
        key: SessionKey,
        role: Role,
        expected: Range<u32>,
        describe: Describe,
        log: Arc<dyn Fn(String) + Send + Sync>,
    ) -> std::io::Result<Children> {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (events_tx, events) = mpsc::channel(1024);
        let lost: Arc<std::sync::OnceLock<LostHook>> = Default::default();
        let refused: Arc<std::sync::atomic::AtomicU64> = Default::default();
        let door = Door {
            handshakes: Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES)),
            refused: refused.clone(),
            admission: Admission {
                key,
                role,
                expected: expected.clone(),
                events: events_tx,
                admitted: Arc::new(Mutex::new(HashSet::new())),
                describe: describe.clone(),
                lost: lost.clone(),
            },
            log: log.clone(),
        };
        let service = OverlayServer::new(door)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        // tonic applies `Server::tcp_nodelay` only to listeners it binds itself; without it
        // on this side, Nagle holds a command behind an unacknowledged one for a delayed ACK
        // (about 40 ms a round on loopback).
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                // Bounds what one connection can make this node hold.
                .concurrency_limit_per_connection(4)
                .http2_keepalive_interval(Some(HEARTBEAT * 5))
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Ok(Children {
            role,
            expected,
            addr,
            events,
            links: BTreeMap::new(),
            senders: Arc::new(Mutex::new(BTreeMap::new())),
            early: HashMap::new(),
            partial: HashMap::new(),
            gone: HashMap::new(),
            late: HashSet::new(),
            commands_sent: false,
            describe,
            lost,
            refused,
            log,
            server,
        })
    }

    /// From now on, `hook` is told (from the link tasks, at once, whatever this node is
    /// doing) of every child that went silent and of every loss its commnode children pass
    /// on. Set once; later calls are ignored.
    pub fn on_lost(&self, hook: LostHook) {
        let _ = self.lost.set(hook);
    }

    /// Where children connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn expected(&self) -> Range<u32> {
        self.expected.clone()
    }

    /// How a child is named in reports.
    pub fn describe(&self, index: u32) -> String {
        (self.describe)(index)
    }

    /// The hello of a joined child (its host, pid).
    pub fn hello(&self, index: u32) -> Option<&Hello> {
        self.links.get(&index).map(|l| &l.hello)
    }

    /// Children joined and not gone.
    pub fn joined(&self) -> Vec<u32> {
        self.links.keys().copied().collect()
    }

    /// Why a child is not (or no longer) part of the session.
    pub fn absence(&self, index: u32) -> NoAnswer {
        if let Some(r) = self.gone.get(&index) {
            r.clone()
        } else if self.late.contains(&index) {
            NoAnswer::TooLate
        } else {
            NoAnswer::NeverConnected
        }
    }

    /// Waits until every expected child has joined, or `deadline`; `progress` is told the
    /// number joined. Returns that number.
    pub async fn wait_joined(
        &mut self,
        deadline: Instant,
        mut progress: impl FnMut(usize),
    ) -> usize {
        progress(self.links.len());
        while self.links.len() + self.gone.len() < self.expected.len() {
            let Ok(Some(ev)) = tokio::time::timeout_at(deadline, self.events.recv()).await else {
                break;
            };
            self.handle(ev);
            progress(self.links.len());
        }
        self.links.len()
    }

    fn handle(&mut self, ev: Event) -> Option<(u32, up::Kind)> {
        match ev {
            Event::Joined { index, hello, down } => {
                if self.commands_sent {
                    self.late.insert(index);
                    let _ = down.try_send(Ok(shutdown_command()));
                } else {
                    self.senders
                        .lock()
                        .expect("not poisoned")
                        .insert(index, down.clone());
                    self.links.insert(index, Link { hello, down });
                }
                None
            }
            Event::Gone { index, reason } => {
                self.senders.lock().expect("not poisoned").remove(&index);
                if self.links.remove(&index).is_some() {
                    self.gone.insert(index, reason);
                }
                None
            }
            Event::Up { index, kind } => Some((index, kind)),
        }
    }

    /// Sends `command` to every joined child (unless `already_sent` by a [`Broadcaster`])
    /// and collects their replies until each has answered, is gone, or `deadline` passes.
    /// `progress` is told the summed progress reports (done, total) of this command.
    /// Answers come for every expected child, in index order.
    pub async fn round(
        &mut self,
        command: &Command,
        deadline: Instant,
        already_sent: bool,
        mut progress: impl FnMut(u64, u64),
    ) -> Vec<(u32, Answer)> {
        self.commands_sent = true;
        let mut pending: HashSet<u32> = HashSet::new();
        let mut answers: BTreeMap<u32, Answer> = BTreeMap::new();
        for (&i, link) in &self.links {
            if let Some(a) = self.early.remove(&(command.id, i)) {
                answers.insert(i, a);
                continue;
            }
            if already_sent {
                pending.insert(i);
                continue;
            }
            match link
                .down
                .try_send(Ok(down::Kind::Command(command.clone()).into()))
            {
                Ok(()) => {
                    pending.insert(i);
                }
                Err(_) => {
                    answers.insert(i, Err(NoAnswer::Congested));
                }
            }
        }
        let mut seen: HashMap<u32, (u64, u64)> = HashMap::new();
        while !pending.is_empty() {
            let ev = match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(_) => {
                    let waited = command.timeout_ms.div_ceil(1000);
                    for i in pending.drain() {
                        answers.insert(i, Err(NoAnswer::Timeout(waited)));
                    }
                    break;
                }
            };
            if let Event::Gone { index, reason } = &ev
                && pending.remove(index)
            {
                answers.insert(*index, Err(reason.clone()));
            }
            let Some((index, kind)) = self.handle(ev) else {
                continue;
            };
            match kind {
                up::Kind::Reply(chunk) => {
                    let id = chunk.command;
                    let buf = self
                        .partial
                        .entry((id, index))
                        .or_insert_with(|| ReplyBuffer::new(MAX_REPLY));
                    let answer = match buf.push(chunk) {
                        Ok(Some(bytes)) => Ok(bytes),
                        Ok(None) => continue,
                        Err(e) => {
                            self.drop_child(index, NoAnswer::DroppedOversized);
                            Err(e.into())
                        }
                    };
                    self.partial.remove(&(id, index));
                    if id == command.id {
                        if pending.remove(&index) {
                            answers.insert(index, answer);
                        }
                    } else if id > command.id {
                        self.early.insert((id, index), answer);
                    }
                }
                up::Kind::Progress(p) if p.command == command.id => {
                    seen.insert(index, (p.done, p.total));
                    let (d, t) = seen.values().fold((0, 0), |(d, t), (a, b)| (d + a, t + b));
                    progress(d, t);
                }
                // Progress of another command, or a protocol violation: ignored.
                _ => {}
            }
        }
        let mut out = Vec::with_capacity(self.expected.len());
        for i in self.expected.clone() {
            let a = answers.remove(&i).unwrap_or_else(|| Err(self.absence(i)));
            out.push((i, a));
        }
        out
    }

    /// A handle that can send a command to every joined child while a round runs (a
    /// detach or shutdown must not wait for sampling to finish).
    pub fn broadcaster(&self) -> Broadcaster {
        Broadcaster {
            senders: self.senders.clone(),
        }
    }

    /// Drops a misbehaving child's link.
    fn drop_child(&mut self, index: u32, reason: NoAnswer) {
        self.senders.lock().expect("not poisoned").remove(&index);
        if let Some(link) = self.links.remove(&index) {
            let _ = link
                .down
                .try_send(Err(Status::invalid_argument(reason.to_string())));
            self.gone.insert(index, reason);
        }
    }

    /// Children that have gone (link closed, broken or silent) since they joined.
    pub fn gone(&self) -> Vec<u32> {
        let mut g: Vec<u32> = self.gone.keys().copied().collect();
        g.sort_unstable();
        g
    }

    /// Sends `Shutdown` to every joined child without waiting for answers (used when this
    /// node is stopping anyway).
    pub fn shutdown_all(&mut self) {
        for link in self.links.values() {
            let _ = link.down.try_send(Ok(shutdown_command()));
        }
    }
}

/// Sends commands to the joined children from anywhere (see [`Children::broadcaster`]).
#[derive(Clone, Debug)]
pub struct Broadcaster {
    senders: SharedSenders,
}

impl Broadcaster {
    pub fn send(&self, command: &Command) {
        for tx in self.senders.lock().expect("not poisoned").values() {
            let _ = tx.try_send(Ok(down::Kind::Command(command.clone()).into()));
        }
    }
}

/// A shutdown for a child that joined too late or whose parent is stopping.
fn shutdown_command() -> Down {
    down::Kind::Command(Command::shutdown(u64::MAX)).into()
}

fn heartbeat() -> Down {
    down::Kind::Heartbeat(Heartbeat {}).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_refusals_logs_the_first_ten_then_each_power_of_ten() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log: Arc<dyn Fn(String) + Send + Sync> =
            Arc::new(move |l| sink.lock().unwrap().push(l));
        let refused = std::sync::atomic::AtomicU64::new(0);
        for _ in 0..1000 {
            note_refusal(&refused, &log, "127.0.0.1:9", "wrong session key");
        }
        let lines = lines.lock().unwrap();
        // 1 to 10, then 100 and 1000.
        assert_eq!(lines.len(), 12, "{lines:?}");
        assert!(lines[11].contains("1000 refused so far"), "{lines:?}");
        assert!(!is_power_of_ten(0) && is_power_of_ten(1) && !is_power_of_ten(20));
    }
}
