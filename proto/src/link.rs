//! The child's end of a link (daemons and commnodes): connect to the parent, prove the
//! session key, then exchange messages; plus the chunked replies both ends use.

use std::time::Duration;

use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;

use crate::auth::{NONCE_LEN, SessionKey, nonce};
use crate::overlay::{
    Challenge, Down, Heartbeat, Hello, MAX_CHUNK, Proof, ReplyChunk, Role, Up, down, up,
};
use crate::service::overlay_client::OverlayClient;

/// How often each end of a link says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// A link silent for this long is dead (a host gone, a network cut: no connection reset
/// ever arrives), however long the command it was running may take.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(10);
/// How long each step of the handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest encoded message accepted on a link: a chunk plus framing.
pub const MAX_MESSAGE: usize = MAX_CHUNK + 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("{addr} refused the link: {reason}")]
    Refused { addr: String, reason: String },
    #[error("{addr} did not prove the session key: it is not this session's parent")]
    BadParent { addr: String },
    #[error("link to {addr} failed: {reason}")]
    Transport { addr: String, reason: String },
}

/// An established link to the parent.
#[derive(Debug)]
pub struct ParentLink {
    /// Messages up. Heartbeats are sent by a task of their own while this sender lives.
    pub up: mpsc::Sender<Up>,
    /// Messages down (the handshake already consumed).
    pub down: tonic::Streaming<Down>,
}

/// Connects to `addr` (`host:port`) as `role` number `index`, runs the handshake and starts
/// the heartbeat. A connection that fails in transport (the parent's listen queue full when
/// thousands of daemons start at once, a reset) is tried again, up to 6 times over about
/// 6 s with growing pauses; a refusal by the parent (wrong key, place taken) is final.
pub async fn connect(
    addr: &str,
    key: &SessionKey,
    role: Role,
    index: u32,
) -> Result<ParentLink, LinkError> {
    let mut pause = Duration::from_millis(100);
    let mut tries = 0;
    loop {
        match connect_once(addr, key, role, index).await {
            Err(LinkError::Connect { .. }) | Err(LinkError::Transport { .. }) if tries < 6 => {
                tries += 1;
                // Spread the retries of many children apart.
                let jitter = Duration::from_millis((index as u64 * 37 + tries * 11) % 100);
                tokio::time::sleep(pause + jitter).await;
                pause *= 2;
            }
            Err(LinkError::Transport { addr, reason }) => {
                return Err(LinkError::Refused { addr, reason });
            }
            other => return other,
        }
    }
}

async fn connect_once(
    addr: &str,
    key: &SessionKey,
    role: Role,
    index: u32,
) -> Result<ParentLink, LinkError> {
    let connect_err = |reason: String| LinkError::Connect {
        addr: addr.to_string(),
        reason,
    };
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| connect_err(e.to_string()))?
        .connect_timeout(HANDSHAKE_TIMEOUT)
        .tcp_nodelay(true);
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| connect_err(error_chain(&e)))?;
    let mut client = OverlayClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let (tx, rx) = mpsc::channel::<Up>(64);
    let hello = Hello {
        protocol_version: crate::PROTOCOL_VERSION,
        role: role as i32,
        index,
        nonce: nonce(),
        host: hostname(),
        pid: std::process::id(),
    };
    let _ = tx.send(up::Kind::Hello(hello.clone()).into()).await;
    let refused = |reason: String| LinkError::Refused {
        addr: addr.to_string(),
        reason,
    };
    let mut down = client
        .link(ReceiverStream::new(rx))
        .await
        .map_err(|s| {
            if s.code() == tonic::Code::PermissionDenied {
                refused(s.message().to_string())
            } else {
                LinkError::Transport {
                    addr: addr.to_string(),
                    reason: s.message().to_string(),
                }
            }
        })?
        .into_inner();
    let first = tokio::time::timeout(HANDSHAKE_TIMEOUT, down.message())
        .await
        .map_err(|_| refused("no challenge within the handshake timeout".into()))?
        .map_err(|s| refused(s.message().to_string()))?;
    let challenge: Challenge = match first.and_then(|m| m.kind) {
        Some(down::Kind::Challenge(c)) => c,
        _ => return Err(refused("its first message was not a challenge".into())),
    };
    if challenge.protocol_version != crate::PROTOCOL_VERSION {
        return Err(refused(format!(
            "it speaks protocol version {}, this strata speaks {}: run the same strata \
             binary everywhere",
            challenge.protocol_version,
            crate::PROTOCOL_VERSION
        )));
    }
    if challenge.nonce.len() != NONCE_LEN
        || !key.verify_parent(&hello, &challenge.nonce, &challenge.mac)
    {
        return Err(LinkError::BadParent {
            addr: addr.to_string(),
        });
    }
    let proof = key.child_proof(&hello, &challenge.nonce);
    let _ = tx.send(up::Kind::Proof(Proof { mac: proof }).into()).await;
    // The parent's answer to the proof: a heartbeat admits this child; a refusal (a place
    // already taken) must fail here, not as a link that ends without a word.
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, down.message()).await {
        Err(_) => return Err(refused("no admission within the handshake timeout".into())),
        Ok(Err(s)) => return Err(refused(s.message().to_string())),
        Ok(Ok(Some(Down {
            kind: Some(down::Kind::Heartbeat(_)),
        }))) => {}
        Ok(Ok(_)) => {
            return Err(refused(
                "its answer to the proof was not an admission".into(),
            ));
        }
    }
    heartbeat(tx.clone(), || up::Kind::Heartbeat(Heartbeat {}).into());
    Ok(ParentLink { up: tx, down })
}

/// Sends `message()` every [`HEARTBEAT`] on `tx` until its receiver is gone (both ends of a
/// link say they are alive this way).
pub fn heartbeat<T: Send + 'static>(
    tx: mpsc::Sender<T>,
    message: impl Fn() -> T + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        loop {
            tick.tick().await;
            if tx.send(message()).await.is_err() {
                break;
            }
        }
    })
}

/// The next message down that is not a heartbeat; `None` when the link is closed, broken
/// or silent for [`SILENCE_LIMIT`].
pub async fn next_down(down: &mut tonic::Streaming<Down>) -> Option<down::Kind> {
    loop {
        match tokio::time::timeout(SILENCE_LIMIT, down.message()).await {
            Ok(Ok(Some(Down {
                kind: Some(down::Kind::Heartbeat(_)),
            }))) => continue,
            Ok(Ok(Some(Down { kind: Some(k) }))) => return Some(k),
            Ok(Ok(Some(Down { kind: None }))) => continue,
            _ => return None,
        }
    }
}

/// Sends `reply` to command `command` as chunks of at most [`MAX_CHUNK`] bytes.
pub async fn send_reply(
    up: &mpsc::Sender<Up>,
    command: u64,
    reply: &impl Message,
) -> Result<(), mpsc::error::SendError<Up>> {
    send_reply_bytes(up, command, &reply.encode_to_vec()).await
}

/// [`send_reply`] of an already encoded reply.
pub async fn send_reply_bytes(
    up: &mpsc::Sender<Up>,
    command: u64,
    bytes: &[u8],
) -> Result<(), mpsc::error::SendError<Up>> {
    let mut pieces = bytes.chunks(MAX_CHUNK).peekable();
    if pieces.peek().is_none() {
        return up.send(chunk(command, Vec::new(), false)).await;
    }
    while let Some(p) = pieces.next() {
        let more = pieces.peek().is_some();
        up.send(chunk(command, p.to_vec(), more)).await?;
    }
    Ok(())
}

fn chunk(command: u64, data: Vec<u8>, more: bool) -> Up {
    up::Kind::Reply(ReplyChunk {
        command,
        data,
        more,
    })
    .into()
}

/// A reply whose chunks add up to more than its [`ReplyBuffer`]'s limit.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("reply exceeds the limit of {limit} bytes")]
pub struct OversizedReply {
    pub limit: usize,
}

/// Collects the chunks of one reply, refusing to grow past `limit` bytes.
#[derive(Debug)]
pub struct ReplyBuffer {
    data: Vec<u8>,
    limit: usize,
}

impl ReplyBuffer {
    pub fn new(limit: usize) -> ReplyBuffer {
        ReplyBuffer {
            data: Vec::new(),
            limit,
        }
    }

    /// Adds a chunk: `Ok(Some(bytes))` when the reply is complete.
    pub fn push(&mut self, chunk: ReplyChunk) -> Result<Option<Vec<u8>>, OversizedReply> {
        if self.data.len() + chunk.data.len() > self.limit {
            return Err(OversizedReply { limit: self.limit });
        }
        self.data.extend_from_slice(&chunk.data);
        Ok((!chunk.more).then(|| std::mem::take(&mut self.data)))
    }
}

/// This host's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

/// An error and its sources on one line (tonic's transport errors hide the cause).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}
