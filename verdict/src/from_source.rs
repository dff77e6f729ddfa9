//! The arguments of the ranks' MPI calls, from the program's source and variables: the
//! best-effort producer of [`Arguments`].
//!
//! For every group of ranks blocked in one call at one call site, the call's argument
//! expressions are read from the source line ([`SourceIndex::call_arguments`]); names in
//! them that are not MPI constants are variables, read by the daemons in the calling frame
//! of each rank after sampling ([`requests`] says which; the reads come back in the
//! result's `variables`); [`arguments`] then evaluates the expressions per rank.
//!
//! MPI's constants are recognised by name in the source (`MPI_ANY_SOURCE`,
//! `MPI_COMM_WORLD`...), which holds on every MPI library. A value read from a variable is
//! recognised by the library's ABI instead ([`Abi`]): Open MPI's `MPI_ANY_SOURCE` is -1 and
//! `MPI_PROC_NULL` -2, MPICH's and Intel MPI's the other way round; MPICH's
//! `MPI_COMM_WORLD` is the integer `0x44000000`; Open MPI's C communicator is a pointer, to
//! `ompi_mpi_comm_world` for the world (its Fortran handle is the integer 0).
//!
//! What is not evaluated is said, never guessed: an expression strata does not evaluate
//! (`nbr[i]`, `p->peer`), an optimised-out variable, a source that cannot be read.

use crate::arguments::{Arguments, CallArguments, Communicator, Origin, Peer};
use crate::observe::{Activity, Observations};
use crate::signature::{Signature, Slot, signature};
use rustc_hash::FxHashMap;
use strata_progress::source::{Argument, Expr, Language, Operator, SourceIndex};
use strata_proto::overlay::VariableRequest;
use strata_result::StrataResult;
use strata_result::variables::Reading;

/// The MPI library's binary interface, for values read from variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    OpenMpi,
    /// MPICH and the libraries built on its ABI (Intel MPI, MVAPICH, Cray MPICH).
    Mpich,
    Unknown,
}

impl Abi {
    /// The ABI of the MPI library `result`'s ranks loaded, by the library's file name and
    /// the names of its internals.
    pub fn of(result: &StrataResult) -> Abi {
        let mut found = Abi::Unknown;
        for frame in result.tree_2d.frames().iter() {
            let Some(code) = frame.code() else { continue };
            let module = code.module.as_ref().map(|m| m.basename()).unwrap_or("");
            let function = code.function.as_deref().unwrap_or("");
            if module.starts_with("libmpi.so.4")
                || module.starts_with("libopen-pal")
                || module.starts_with("libmpi_mpifh")
                || function.starts_with("ompi_")
                || function.starts_with("opal_")
            {
                return Abi::OpenMpi;
            }
            if module.starts_with("libmpich")
                || module.starts_with("libmpi.so.12")
                || module.starts_with("libmpifort")
                || function.starts_with("MPIR_")
                || function.starts_with("MPIDI_")
            {
                found = Abi::Mpich;
            }
        }
        found
    }

    fn peer(self, value: i64) -> Peer {
        match (self, value) {
            (_, v) if v >= 0 => u32::try_from(v)
                .map(Peer::Rank)
                .unwrap_or_else(|_| Peer::Unknown(format!("{v} is not a rank"))),
            (Abi::OpenMpi, -1) | (Abi::Mpich, -2) => Peer::Any,
            (Abi::OpenMpi, -2) | (Abi::Mpich, -1) => Peer::ProcNull,
            (Abi::Unknown, -1 | -2) => Peer::Unknown(format!(
                "{value} is MPI_ANY_SOURCE or MPI_PROC_NULL depending on the MPI library, which \
                 was not recognised"
            )),
            (_, v) => Peer::Unknown(format!("{v} is not a rank")),
        }
    }

    fn communicator(self, value: i64, language: Option<Language>) -> Option<Communicator> {
        let fortran = language == Some(Language::Fortran);
        match (self, value) {
            (Abi::Mpich, 0x4400_0000) => Some(Communicator::World),
            (Abi::Mpich, 0x4400_0001) => Some(Communicator::Itself),
            (Abi::OpenMpi, 0) if fortran => Some(Communicator::World),
            (Abi::OpenMpi, 1) if fortran => Some(Communicator::Itself),
            _ => None,
        }
    }
}

/// A value while evaluating: an integer, or an MPI constant named in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Integer(i64),
    AnySource,
    ProcNull,
    World,
    Itself,
}

/// MPI's constants that matter here, by name in any case (Fortran), C++'s `MPI::` too.
fn constant(name: &str) -> Option<Value> {
    let name = name
        .strip_prefix("MPI::")
        .map_or(name.to_string(), |rest| format!("MPI_{rest}"));
    match name.to_ascii_uppercase().as_str() {
        "MPI_ANY_SOURCE" => Some(Value::AnySource),
        "MPI_PROC_NULL" => Some(Value::ProcNull),
        "MPI_COMM_WORLD" => Some(Value::World),
        "MPI_COMM_SELF" => Some(Value::Itself),
        _ => None,
    }
}

/// A variable's value for one rank, or why there is none.
enum Read<'a> {
    Integer(i64),
    Text(&'a str),
}

fn evaluate<'r>(
    e: &Expr,
    read: &mut dyn FnMut(&str) -> Result<Read<'r>, String>,
) -> Result<Value, String> {
    let integer = |v: Value, e: &Expr| match v {
        Value::Integer(i) => Ok(i),
        _ => Err(format!("{} is an MPI constant in arithmetic", shown(e))),
    };
    match e {
        Expr::Integer(i) => Ok(Value::Integer(*i)),
        Expr::Name(name) => match constant(name) {
            Some(v) => Ok(v),
            None => match read(name)? {
                Read::Integer(i) => Ok(Value::Integer(i)),
                Read::Text(t) => Err(format!("{name} = {t}, not an integer")),
            },
        },
        Expr::Negate(inner) => {
            let v = evaluate(inner, read)?;
            Ok(Value::Integer(
                integer(v, inner)?
                    .checked_neg()
                    .ok_or("an overflow in the argument")?,
            ))
        }
        Expr::Binary(op, l, r) => {
            let a = integer(evaluate(l, read)?, l)?;
            let b = integer(evaluate(r, read)?, r)?;
            let v = match op {
                Operator::Add => a.checked_add(b),
                Operator::Subtract => a.checked_sub(b),
                Operator::Multiply => a.checked_mul(b),
                Operator::Divide => a.checked_div(b),
                Operator::Remainder => a.checked_rem(b),
            };
            v.map(Value::Integer)
                .ok_or_else(|| format!("{} overflows or divides by 0", shown(e)))
        }
        // Fortran's `mod` takes the sign of the dividend (C's `%`), `modulo` the divisor's.
        Expr::Call(name, args) if args.len() == 2 => {
            let which = name.to_ascii_lowercase();
            if which != "mod" && which != "modulo" {
                return Err(format!("{} is not evaluated", shown(e)));
            }
            let a = integer(evaluate(&args[0], read)?, &args[0])?;
            let b = integer(evaluate(&args[1], read)?, &args[1])?;
            let v = if which == "mod" {
                a.checked_rem(b)
            } else {
                a.checked_rem(b).map(|m| {
                    if m != 0 && (m < 0) != (b < 0) {
                        m + b
                    } else {
                        m
                    }
                })
            };
            v.map(Value::Integer)
                .ok_or_else(|| format!("{} divides by 0", shown(e)))
        }
        _ => Err(format!("{} is not evaluated", shown(e))),
    }
}

/// An expression as a user wrote it, near enough for a message.
fn shown(e: &Expr) -> String {
    match e {
        Expr::Integer(i) => i.to_string(),
        Expr::Name(n) => n.clone(),
        Expr::Negate(inner) => format!("-{}", shown(inner)),
        Expr::Binary(op, l, r) => {
            let op = match op {
                Operator::Add => "+",
                Operator::Subtract => "-",
                Operator::Multiply => "*",
                Operator::Divide => "/",
                Operator::Remainder => "%",
            };
            format!("{} {op} {}", shown(l), shown(r))
        }
        Expr::Call(name, args) => format!(
            "{name}({})",
            args.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        Expr::Other(text) => format!("`{text}`"),
    }
}

/// The variables an expression reads.
fn names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Name(n) if constant(n).is_none() && !out.contains(n) => out.push(n.clone()),
        Expr::Negate(inner) => names(inner, out),
        Expr::Binary(_, l, r) => {
            names(l, out);
            names(r, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| names(a, out)),
        _ => {}
    }
}

/// A call site's arguments that matter, as expressions.
#[derive(Clone, Debug, Default)]
struct SiteExprs {
    source: Option<Result<Expr, String>>,
    destination: Option<Result<Expr, String>>,
    root: Option<Result<Expr, String>>,
    communicator: Option<Result<Expr, String>>,
    language: Option<Language>,
}

impl SiteExprs {
    /// The expression of `slot` of a call with `signature`, when the source gave one.
    fn of(&self, signature: &Signature, slot: Slot) -> Option<&Expr> {
        let field = if signature.source == Some(slot) {
            &self.source
        } else if signature.destination == Some(slot) {
            &self.destination
        } else if signature.root == Some(slot) {
            &self.root
        } else if signature.communicator == Some(slot) {
            &self.communicator
        } else {
            return None;
        };
        field.as_ref()?.as_ref().ok()
    }
}

/// Whether an expression is made of literals and MPI constants only.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Integer(_) => true,
        Expr::Name(n) => constant(n).is_some(),
        Expr::Negate(inner) => is_constant(inner),
        Expr::Binary(_, l, r) => is_constant(l) && is_constant(r),
        Expr::Call(..) | Expr::Other(_) => false,
    }
}

fn pick(arguments: &[Argument], slot: Option<Slot>) -> Option<Result<Expr, String>> {
    let slot = slot?;
    let by_keyword = arguments.iter().find(|a| {
        a.keyword
            .as_deref()
            .is_some_and(|k| k.eq_ignore_ascii_case(slot.keyword))
    });
    let found = by_keyword.or_else(|| arguments.get(slot.position).filter(|a| a.keyword.is_none()));
    Some(found.map(|a| a.value.clone()).ok_or_else(|| {
        format!(
            "the call on the source line has no argument {}",
            slot.position + 1
        )
    }))
}

/// One blocking call at one call site, and the ranks there.
struct Site {
    function: String,
    file: String,
    line: u32,
    call: String,
    signature: Signature,
    ranks: Vec<u32>,
}

fn sites(observations: &Observations) -> Vec<Site> {
    let mut out: Vec<Site> = Vec::new();
    for group in observations.groups() {
        let Activity::InMpi {
            call,
            call_site: Some(place),
        } = &group.state.activity
        else {
            continue;
        };
        let (Some(function), Some(file), Some(line), Some(signature)) = (
            place.function.clone(),
            place.file.clone(),
            place.line,
            signature(&call.name),
        ) else {
            continue;
        };
        let ranks = group.ranks.iter().collect();
        out.push(Site {
            function,
            file,
            line,
            call: call.name.clone(),
            signature,
            ranks,
        });
    }
    out
}

fn site_exprs(site: &Site, sources: &mut SourceIndex) -> Result<SiteExprs, String> {
    let arguments = sources
        .call_arguments(&site.file, site.line, &site.call)
        .map_err(|e| e.to_string())?;
    Ok(SiteExprs {
        source: pick(&arguments, site.signature.source),
        destination: pick(&arguments, site.signature.destination),
        root: pick(&arguments, site.signature.root),
        communicator: pick(&arguments, site.signature.communicator),
        language: Language::from_path(&site.file),
    })
}

/// The variables to read, in the calling frames, to evaluate the arguments of the calls the
/// ranks are blocked in.
pub fn requests(observations: &Observations, sources: &mut SourceIndex) -> Vec<VariableRequest> {
    let mut out: Vec<VariableRequest> = Vec::new();
    for site in sites(observations) {
        let exprs = site_exprs(&site, sources).ok();
        // What the call was passed, from DWARF call-site parameters: at -O2 the variables
        // are often gone, and no source is needed. A slot the source states with constants
        // alone (`MPI_COMM_WORLD`, `0`) needs no read: every read stops every rank again.
        let mut wanted: Vec<String> = passed_slots(&site)
            .filter(|&slot| {
                !exprs
                    .as_ref()
                    .and_then(|e| e.of(&site.signature, slot))
                    .is_some_and(is_constant)
            })
            .map(passed_name)
            .collect();
        if let Some(exprs) = &exprs {
            for e in [
                &exprs.source,
                &exprs.destination,
                &exprs.root,
                &exprs.communicator,
            ]
            .into_iter()
            .flatten()
            .flatten()
            {
                names(e, &mut wanted);
            }
        }
        for variable in wanted {
            let request = VariableRequest {
                function: site.function.clone(),
                variable,
            };
            if !out.contains(&request) {
                out.push(request);
            }
        }
    }
    out
}

/// The arguments of every rank's blocking call, evaluated from the source and the
/// variables read into `result` (see the module's doc).
pub fn arguments(
    result: &StrataResult,
    observations: &Observations,
    sources: &mut SourceIndex,
) -> Arguments {
    let abi = Abi::of(result);
    let job_size = observations.ranks.len();
    let mut out = Arguments {
        ranks: vec![None; job_size],
    };
    // (function, variable) -> rank -> reading.
    let mut reads: FxHashMap<(&str, &str), FxHashMap<u32, &Reading>> = FxHashMap::default();
    for v in &result.meta.variables {
        let by_rank = reads
            .entry((v.function.as_str(), v.variable.as_str()))
            .or_default();
        for class in &v.classes {
            for rank in v.class_ranks(class).iter() {
                by_rank.insert(rank, &class.reading);
            }
        }
    }
    for site in sites(observations) {
        let exprs = site_exprs(&site, sources);
        for &rank in &site.ranks {
            let mut read = |name: &str| -> Result<Read<'_>, String> {
                match reads
                    .get(&(site.function.as_str(), name))
                    .and_then(|by_rank| by_rank.get(&rank))
                {
                    Some(Reading::Integer(i)) => Ok(Read::Integer(*i)),
                    Some(Reading::Value(t)) => Ok(Read::Text(t.as_str())),
                    Some(Reading::OptimizedOut) => Err(format!("{name} is <optimized out>")),
                    Some(Reading::Error(e)) => Err(format!("{name}: {e}")),
                    None => Err(format!("{name} was not read")),
                }
            };
            let arguments = match &exprs {
                Err(why) => {
                    let unknown = |slot: Option<Slot>| slot.map(|_| why.clone());
                    CallArguments {
                        source: unknown(site.signature.source).map(Peer::Unknown),
                        destination: unknown(site.signature.destination).map(Peer::Unknown),
                        root: unknown(site.signature.root).map(Peer::Unknown),
                        communicator: unknown(site.signature.communicator)
                            .map(Communicator::Unknown),
                        requests: None,
                        origin: Some(Origin::SourceAndVariables),
                    }
                }
                Ok(exprs) => {
                    let mut peer = |e: &Option<Result<Expr, String>>| {
                        e.as_ref().map(|e| match e {
                            Err(why) => Peer::Unknown(why.clone()),
                            Ok(e) => match evaluate(e, &mut read) {
                                Ok(Value::Integer(i)) => abi.peer(i),
                                Ok(Value::AnySource) => Peer::Any,
                                Ok(Value::ProcNull) => Peer::ProcNull,
                                Ok(_) => Peer::Unknown(format!("{} is a communicator", shown(e))),
                                Err(why) => Peer::Unknown(why),
                            },
                        })
                    };
                    let source = peer(&exprs.source);
                    let destination = peer(&exprs.destination);
                    let root = peer(&exprs.root);
                    let communicator = exprs.communicator.as_ref().map(|e| match e {
                        Err(why) => Communicator::Unknown(why.clone()),
                        Ok(e) => communicator(e, abi, exprs.language, &mut read),
                    });
                    CallArguments {
                        source,
                        destination,
                        root,
                        communicator,
                        requests: None,
                        origin: Some(Origin::SourceAndVariables),
                    }
                }
            };
            let mut arguments = arguments;
            // The values the call was passed, where the daemons read them, win over the
            // source's expressions: they are what the call got.
            let passed = |slot: Option<Slot>| {
                let slot = slot.filter(|s| passed_slots(&site).any(|p| p == *s))?;
                reads
                    .get(&(site.function.as_str(), passed_name(slot).as_str()))?
                    .get(&rank)
                    .copied()
            };
            let signature = site.signature;
            for (slot, field) in [
                (signature.source, &mut arguments.source),
                (signature.destination, &mut arguments.destination),
                (signature.root, &mut arguments.root),
            ] {
                // An `int` in a 64-bit register: its upper half is not part of it.
                if let Some(Reading::Integer(i)) = passed(slot) {
                    *field = Some(abi.peer(i64::from(*i as i32)));
                }
            }
            match passed(signature.communicator) {
                Some(Reading::Integer(i)) => {
                    let handle = i64::from(*i as i32);
                    arguments.communicator = Some(
                        abi.communicator(handle, Language::from_path(&site.file))
                            .unwrap_or_else(|| Communicator::Other(format!("{i:#x}"))),
                    );
                }
                Some(Reading::Value(t)) => {
                    arguments.communicator = Some(
                        named_communicator(t, abi)
                            .unwrap_or_else(|| Communicator::Other(t.clone())),
                    );
                }
                _ => {}
            }
            if let Some(slot) = out.ranks.get_mut(rank as usize) {
                *slot = Some(arguments);
            }
        }
    }
    out
}

/// A communicator pointer by the object it points to (Open MPI's C handles).
fn named_communicator(text: &str, abi: Abi) -> Option<Communicator> {
    match abi {
        Abi::OpenMpi if text.ends_with("<ompi_mpi_comm_world>") => Some(Communicator::World),
        Abi::OpenMpi if text.ends_with("<ompi_mpi_comm_self>") => Some(Communicator::Itself),
        _ => None,
    }
}

/// The slots of a call site whose value the daemons can read from DWARF call-site
/// parameters: the six register arguments of a C or C++ call (Fortran passes addresses).
fn passed_slots(site: &Site) -> impl Iterator<Item = Slot> + use<> {
    let c_like = matches!(
        Language::from_path(&site.file),
        Some(Language::C | Language::Cpp)
    );
    let s = site.signature;
    [s.source, s.destination, s.root, s.communicator]
        .into_iter()
        .flatten()
        .filter(move |slot| c_like && slot.position < 6)
}

/// The daemons' name for the value a call was passed in `slot` (`@arg4`).
fn passed_name(slot: Slot) -> String {
    format!("@arg{}", slot.position + 1)
}

fn communicator<'r>(
    e: &Expr,
    abi: Abi,
    language: Option<Language>,
    read: &mut dyn FnMut(&str) -> Result<Read<'r>, String>,
) -> Communicator {
    if let Expr::Name(name) = e
        && constant(name).is_none()
    {
        // A variable: by the ABI's handles, else it is some other communicator.
        return match read(name) {
            Ok(Read::Integer(i)) => abi
                .communicator(i, language)
                .unwrap_or_else(|| Communicator::Other(format!("{name} = {i:#x}"))),
            Ok(Read::Text(t)) => named_communicator(t, abi)
                .unwrap_or_else(|| Communicator::Other(format!("{name} = {t}"))),
            Err(why) => Communicator::Unknown(why),
        };
    }
    match evaluate(e, read) {
        Ok(Value::World) => Communicator::World,
        Ok(Value::Itself) => Communicator::Itself,
        Ok(Value::Integer(i)) => abi
            .communicator(i, language)
            .unwrap_or_else(|| Communicator::Other(format!("{} = {i:#x}", shown(e)))),
        Ok(_) => Communicator::Unknown(format!("{} is not a communicator", shown(e))),
        Err(why) => Communicator::Unknown(why),
    }
}

#[cfg(test)]
mod tests;
