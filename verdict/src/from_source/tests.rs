use super::*;
use crate::observe::observe;
use crate::testing::{mpi, result, stack};
use strata_filters::Frame;
use strata_result::variables::{ReadClass, VariableReads};

/// `app.c` in a temporary folder, the index that finds it, and the line of `marker`.
fn source(text: &str) -> (tempfile::TempDir, SourceIndex) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.c"), text).unwrap();
    let index = SourceIndex::new(vec![dir.path().to_path_buf()]);
    (dir, index)
}

fn line_of(text: &str, marker: &str) -> u32 {
    let index = text.lines().position(|l| l.contains(marker)).unwrap();
    u32::try_from(index + 1).unwrap()
}

fn in_call(function: &str, line: u32) -> Vec<Frame> {
    stack(
        line,
        vec![mpi(function, 0x100), mpi("opal_progress", 0x200)],
    )
}

fn integer_reads(variable: &str, values: &[(i64, &str)]) -> VariableReads {
    VariableReads {
        for_verdict: false,
        function: "main".into(),
        variable: variable.into(),
        classes: values
            .iter()
            .map(|(v, ranks)| ReadClass {
                reading: Reading::Integer(*v),
                ranks: (*ranks).into(),
                at: None,
            })
            .collect(),
    }
}

const RING: &str = "int main(void) {\n  int rank, size, x;\n  \
    MPI_Recv(&x, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, 0); /* recv */\n  \
    MPI_Barrier(comm); /* barrier */\n}\n";

#[test]
fn peers_are_evaluated_per_rank_from_the_source_and_the_variables_read() {
    let (_dir, mut sources) = source(RING);
    let recv = line_of(RING, "recv");
    let mut r = result(3, 2, |_, _| in_call("PMPI_Recv", recv));
    let observations = observe(&r);
    let wanted = requests(&observations, &mut sources);
    let names: Vec<&str> = wanted.iter().map(|q| q.variable.as_str()).collect();
    // The value the call was passed as its source, then the source's variables; the
    // communicator is MPI_COMM_WORLD on the line: nothing to read for it.
    assert_eq!(names, ["@arg4", "rank", "size"]);
    assert!(wanted.iter().all(|q| q.function == "main"));
    r.meta.variables = vec![
        integer_reads("rank", &[(0, "0"), (1, "1"), (2, "2")]),
        integer_reads("size", &[(3, "0-2")]),
    ];
    let args = arguments(&r, &observations, &mut sources);
    let sources_of: Vec<Option<Peer>> = (0..3)
        .map(|rank| args.of(rank).and_then(|a| a.source.clone()))
        .collect();
    assert_eq!(
        sources_of,
        [
            Some(Peer::Rank(2)),
            Some(Peer::Rank(0)),
            Some(Peer::Rank(1))
        ]
    );
    let a = args.of(0).unwrap();
    assert_eq!(a.communicator, Some(Communicator::World));
    assert_eq!(a.destination, None, "a receive has no destination");
    assert_eq!(a.origin, Some(Origin::SourceAndVariables));
}

#[test]
fn what_was_not_read_is_unknown_with_the_reason() {
    let (_dir, mut sources) = source(RING);
    let recv = line_of(RING, "recv");
    let mut r = result(2, 2, |_, _| in_call("PMPI_Recv", recv));
    r.meta.variables = vec![VariableReads {
        for_verdict: false,
        function: "main".into(),
        variable: "rank".into(),
        classes: vec![ReadClass {
            reading: Reading::OptimizedOut,
            ranks: "0-1".into(),
            at: None,
        }],
    }];
    let args = arguments(&r, &observe(&r), &mut sources);
    match &args.of(1).unwrap().source {
        Some(Peer::Unknown(why)) => assert!(why.contains("rank is <optimized out>"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn communicator_variables_are_recognised_by_the_abi_or_left_unknown() {
    let (_dir, mut sources) = source(RING);
    let barrier = line_of(RING, "barrier");
    let mut r = result(2, 2, |_, _| in_call("PMPI_Barrier", barrier));
    assert_eq!(Abi::of(&r), Abi::OpenMpi, "libmpi.so.40 is Open MPI's");
    r.meta.variables = vec![VariableReads {
        for_verdict: false,
        function: "main".into(),
        variable: "comm".into(),
        classes: vec![
            ReadClass {
                reading: Reading::Value("0x7f0000001000 <ompi_mpi_comm_world>".into()),
                ranks: "0".into(),
                at: None,
            },
            ReadClass {
                reading: Reading::Value("0x55d0c0a2b3c0".into()),
                ranks: "1".into(),
                at: None,
            },
        ],
    }];
    let args = arguments(&r, &observe(&r), &mut sources);
    assert_eq!(args.of(0).unwrap().communicator, Some(Communicator::World));
    assert!(matches!(
        &args.of(1).unwrap().communicator,
        Some(Communicator::Other(what)) if what == "comm = 0x55d0c0a2b3c0"
    ));
}

#[test]
fn negative_peers_follow_the_library_abi() {
    assert_eq!(Abi::OpenMpi.peer(-1), Peer::Any);
    assert_eq!(Abi::Mpich.peer(-1), Peer::ProcNull);
    assert_eq!(Abi::Mpich.peer(-2), Peer::Any);
    assert!(matches!(Abi::Unknown.peer(-2), Peer::Unknown(_)));
    assert_eq!(
        Abi::Mpich.communicator(0x4400_0000, Some(Language::C)),
        Some(Communicator::World)
    );
    assert_eq!(Abi::OpenMpi.communicator(0, Some(Language::C)), None);
    assert_eq!(
        Abi::OpenMpi.communicator(0, Some(Language::Fortran)),
        Some(Communicator::World)
    );
}

#[test]
fn a_missing_source_leaves_every_argument_unknown() {
    let mut sources = SourceIndex::new(Vec::new());
    let r = result(2, 2, |_, _| in_call("PMPI_Recv", 3));
    let args = arguments(&r, &observe(&r), &mut sources);
    match &args.of(0).unwrap().source {
        Some(Peer::Unknown(why)) => assert!(why.contains("cannot read app.c"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(args.is_empty(), "nothing known: no graph to draw");
    // What the call was passed needs no source.
    let names: Vec<String> = requests(&observe(&r), &mut sources)
        .into_iter()
        .map(|q| q.variable)
        .collect();
    assert_eq!(names, ["@arg4", "@arg6"]);
}

#[test]
fn fortran_intrinsics_and_constants_evaluate() {
    let mut read = |name: &str| -> Result<Read<'static>, String> {
        match name {
            "r" => Ok(Read::Integer(-1)),
            "n" => Ok(Read::Integer(4)),
            _ => Err(format!("{name} was not read")),
        }
    };
    let modulo = Expr::Call(
        "MODULO".into(),
        vec![Expr::Name("r".into()), Expr::Name("n".into())],
    );
    assert_eq!(evaluate(&modulo, &mut read), Ok(Value::Integer(3)));
    let m = Expr::Call(
        "mod".into(),
        vec![Expr::Name("r".into()), Expr::Name("n".into())],
    );
    assert_eq!(evaluate(&m, &mut read), Ok(Value::Integer(-1)));
    assert_eq!(
        evaluate(&Expr::Name("mpi_any_source".into()), &mut read),
        Ok(Value::AnySource)
    );
    let e = evaluate(&Expr::Other("nbr[i]".into()), &mut read).unwrap_err();
    assert_eq!(e, "`nbr[i]` is not evaluated");
}

#[test]
fn the_values_a_call_was_passed_win_over_the_source() {
    let (_dir, mut sources) = source(RING);
    let recv = line_of(RING, "recv");
    let mut r = result(2, 2, |_, _| in_call("PMPI_Recv", recv));
    // Rank 0's call got 1 (in a register whose upper half is garbage) and the world
    // communicator; rank 1's call-site values were not described: its variables answer.
    r.meta.variables = vec![
        integer_reads("@arg4", &[(0x7f00_0000_0001, "0")]),
        VariableReads {
            for_verdict: false,
            function: "main".into(),
            variable: "@arg6".into(),
            classes: vec![
                ReadClass {
                    reading: Reading::Value("0x55d0c0a2b260 <ompi_mpi_comm_world>".into()),
                    ranks: "0".into(),
                    at: None,
                },
                ReadClass {
                    reading: Reading::OptimizedOut,
                    ranks: "1".into(),
                    at: None,
                },
            ],
        },
        integer_reads("rank", &[(0, "0"), (1, "1")]),
        integer_reads("size", &[(2, "0-1")]),
    ];
    let args = arguments(&r, &observe(&r), &mut sources);
    let zero = args.of(0).unwrap();
    assert_eq!(zero.source, Some(Peer::Rank(1)));
    assert_eq!(zero.communicator, Some(Communicator::World));
    let one = args.of(1).unwrap();
    assert_eq!(one.source, Some(Peer::Rank(0)), "(1 + 2 - 1) % 2");
    assert_eq!(
        one.communicator,
        Some(Communicator::World),
        "MPI_COMM_WORLD by name"
    );
}
