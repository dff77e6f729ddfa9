//! The commnode role (`strata commnode`): a tree node between the front end and the
//! daemons. It admits its children, forwards each command from its parent to them with a
//! shorter deadline, merges their replies and sends one reply up.

use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use strata_filters::wire::Limits;
use strata_proto::auth::SessionKey;
use strata_proto::link::{self, LinkError, ParentLink, send_reply, send_reply_bytes};
use strata_proto::overlay::{
    Command, NodeStat, Progress, Role, SampleReply, Up, command::Action, down, up,
};
use thiserror::Error;
use tokio::time::Instant;

use crate::children::{Answer, Children};
use crate::merge;

/// Where a commnode sits in the tree.
#[derive(Clone, Debug)]
pub struct Place {
    /// The parent's address.
    pub parent: String,
    /// This commnode's index in its level.
    pub index: u32,
    /// Its level in the tree (1: a child of the front end).
    pub level: u32,
    /// Its children's indices in the level below.
    pub children: Range<u32>,
    pub child_role: Role,
    /// Describes the daemons under each child, for reports: child index -> daemon range.
    pub daemons_of_child: Vec<Range<u32>>,
    /// Where to listen for children.
    pub listen: SocketAddr,
}

/// How much of a command's time budget a node keeps for itself (merging and sending up)
/// before its own deadline: the children get the rest.
pub fn child_budget(timeout: Duration) -> Duration {
    let margin = (timeout / 10).clamp(Duration::from_millis(200), Duration::from_secs(2));
    timeout.saturating_sub(margin)
}

/// `daemon 3` or `commnode 1 (daemons 2-3)`.
pub fn describe_child(role: Role, index: u32, daemons: Option<&Range<u32>>) -> String {
    match (role, daemons) {
        (Role::Daemon, _) => format!("daemon {index}"),
        (_, Some(d)) if d.len() == 1 => format!("commnode {index} (daemon {})", d.start),
        (_, Some(d)) => format!(
            "commnode {index} (daemons {}-{})",
            d.start,
            d.end.saturating_sub(1)
        ),
        _ => format!("commnode {index}"),
    }
}

/// Why a commnode could not take its place in the tree.
#[derive(Debug, Error)]
pub enum NodeError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Runs a commnode until its parent shuts it down or its link is lost. `announce` is told
/// the listening address once (the local launcher reads it from standard output).
pub async fn run(
    place: Place,
    key: SessionKey,
    announce: impl FnOnce(SocketAddr),
) -> Result<(), NodeError> {
    let role = place.child_role;
    let first_child = place.children.start;
    let daemons = place.daemons_of_child.clone();
    let describe =
        Arc::new(move |i: u32| describe_child(role, i, daemons.get((i - first_child) as usize)));
    let mut children = Children::listen(
        place.listen,
        key.clone(),
        place.child_role,
        place.children.clone(),
        describe,
        Arc::new(|line| crate::stderr::line(format!("strata commnode: {line}"))),
    )
    .await
    .map_err(|source| NodeError::Listen {
        addr: place.listen,
        source,
    })?;
    // What the subtree lost goes up as soon as the link to the parent stands.
    let (lost_tx, mut lost_rx) = tokio::sync::mpsc::unbounded_channel();
    children.on_lost(Arc::new(move |lost| {
        let _ = lost_tx.send(lost);
    }));
    announce(children.addr());
    let ParentLink { up, mut down } =
        link::connect(&place.parent, &key, Role::Commnode, place.index).await?;
    {
        let up = up.clone();
        tokio::spawn(async move {
            while let Some(lost) = lost_rx.recv().await {
                if up.send(up::Kind::Lost(lost).into()).await.is_err() {
                    return;
                }
            }
        });
    }
    // Commands are read by their own task, so that a detach or shutdown reaches the
    // subtree at once, even while a long command (sampling) is still being collected.
    let urgent = children.broadcaster();
    let (queue_tx, mut queue) = tokio::sync::mpsc::unbounded_channel::<(Command, bool)>();
    tokio::spawn(async move {
        while let Some(kind) = link::next_down(&mut down).await {
            let down::Kind::Command(cmd) = kind else {
                continue;
            };
            let is_urgent = cmd.is_urgent();
            if is_urgent {
                urgent.send(&forwarded(&cmd, Instant::now()).0);
            }
            if queue_tx.send((cmd, is_urgent)).is_err() {
                return;
            }
        }
        // The parent is gone: nobody will collect results. The subtree detaches and stops.
        urgent.send(&Command::shutdown(u64::MAX));
    });
    // Task count per child once the rank map is in.
    let mut counts: Vec<(u32, Option<u32>)> = Vec::new();
    let limits = Limits::default();
    while let Some((cmd, already_sent)) = queue.recv().await {
        let (forwarded, deadline) = forwarded(&cmd, Instant::now());
        let Some(action) = cmd.action.clone() else {
            continue;
        };
        if counts.is_empty() {
            children.wait_joined(deadline, |_| {}).await;
        }
        let answers = round(&mut children, &forwarded, deadline, already_sent, &up).await;
        let describe = |i| children.describe(i);
        let sent = match action {
            Action::Setup(_) => {
                let (reply, c) = merge::merge_setup(&answers, &describe);
                counts = c;
                send_reply(&up, cmd.id, &reply).await
            }
            Action::Sample(sample) => {
                let taking_part = merge::taking_part(&counts, &answers);
                let t = std::time::Instant::now();
                let reply = merge::merge_sample(&taking_part, &describe, sample.dense, &limits);
                let mut bytes = prost::Message::encode_to_vec(&reply);
                let bytes_in = taking_part
                    .iter()
                    .filter_map(|(_, _, a)| a.as_ref().ok())
                    .map(|b| b.len() as u64)
                    .sum();
                // This node's cost, appended to the encoded reply: protobuf merges repeated
                // fields of concatenated messages, so the reply is encoded only once.
                let stat = SampleReply {
                    stats: vec![NodeStat {
                        level: place.level,
                        index: place.index,
                        merge_us: t.elapsed().as_micros() as u64,
                        bytes_in,
                        bytes_out: bytes.len() as u64,
                        peak_rss_kib: merge::peak_rss_kib(),
                        ..NodeStat::default()
                    }],
                    ..SampleReply::default()
                };
                bytes.extend(prost::Message::encode_to_vec(&stat));
                send_reply_bytes(&up, cmd.id, &bytes).await
            }
            Action::Stacks(_) => send_reply(&up, cmd.id, &merge::merge_stacks(&answers)).await,
            Action::Probe(_) => send_reply(&up, cmd.id, &merge::merge_probe(&answers)).await,
            Action::ReadVariables(_) => {
                send_reply(&up, cmd.id, &merge::merge_variables(&answers)).await
            }
            Action::Hold(_) | Action::Release(_) => {
                send_reply(&up, cmd.id, &merge::merge_hold(&answers)).await
            }
            Action::ReadMemory(_) => send_reply(&up, cmd.id, &merge::merge_read(&answers)).await,
            Action::Detach(_) | Action::Provide(_) => {
                send_reply(&up, cmd.id, &merge::merge_done(&answers, &describe)).await
            }
            Action::Shutdown(_) => {
                let _ = send_reply(&up, cmd.id, &merge::merge_done(&answers, &describe)).await;
                // Exit once the parent has the reply and closes the link (at most 2 s).
                let closed = async { while queue.recv().await.is_some() {} };
                let _ = tokio::time::timeout(Duration::from_secs(2), closed).await;
                return Ok(());
            }
        };
        if sent.is_err() {
            break;
        }
    }
    // Give the shutdown sent by the reader time to leave.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}

/// The command as this node forwards it (a shorter timeout), and the deadline for the
/// children's answers.
pub fn forwarded(cmd: &Command, received: Instant) -> (Command, Instant) {
    let budget = child_budget(Duration::from_millis(cmd.timeout_ms));
    let mut f = cmd.clone();
    f.timeout_ms = budget.as_millis() as u64;
    (f, received + budget)
}

/// One command round with the children, forwarding their summed progress up (at most ten
/// times a second).
async fn round(
    children: &mut Children,
    cmd: &Command,
    deadline: Instant,
    already_sent: bool,
    up: &tokio::sync::mpsc::Sender<Up>,
) -> Vec<(u32, Answer)> {
    let mut last = Instant::now() - Duration::from_secs(1);
    let id = cmd.id;
    children
        .round(cmd, deadline, already_sent, |done, total| {
            let now = Instant::now();
            if now.duration_since(last) >= Duration::from_millis(100) || done == total {
                last = now;
                let _ = up.try_send(
                    up::Kind::Progress(Progress {
                        command: id,
                        done,
                        total,
                    })
                    .into(),
                );
            }
        })
        .await
}
