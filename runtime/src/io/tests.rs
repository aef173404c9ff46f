//! Round trips through every format, SystemDS's exact output, and bad files.

use super::*;
use rand::{Rng, SeedableRng};

/// A fresh folder under the system's temporary folder, removed when the test is done.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("spores-io-{name}-"))
        .tempdir()
        .unwrap()
}

/// A random matrix with the given density, with awkward values (tiny, huge, negative, NaN,
/// infinite) among its non-zeros.
fn random(rows: usize, cols: usize, density: f64, seed: u64) -> Matrix {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let special = [
        1e-300,
        -2.5e17,
        1.0 / 3.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        7.0,
    ];
    let d = Dense::from_shape_fn((rows, cols), |_| {
        if rng.gen::<f64>() >= density {
            0.0
        } else if rng.gen::<f64>() < 0.2 {
            special[rng.gen_range(0..special.len())]
        } else {
            rng.gen_range(-100.0..100.0)
        }
    });
    Matrix::from_dense(d)
}

use crate::matrix::Dense;

/// Same shape and the same bits in every cell (NaN equals NaN; -0.0 equals 0.0, as no format
/// stores the sign of a zero cell).
fn assert_same(a: &Matrix, b: &Matrix) {
    assert_eq!(a.shape(), b.shape());
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            let (x, y) = (a.get(i, j), b.get(i, j));
            assert!(
                x == y || (x.is_nan() && y.is_nan()),
                "({i},{j}): {x} vs {y}"
            );
        }
    }
}

fn read_matrix(path: &Path, opts: &ReadOptions) -> Matrix {
    match read(path, opts).unwrap_or_else(|e| panic!("{e}")) {
        Data::Matrix(m) => m,
        Data::Scalar(s) => panic!("scalar {s:?}"),
    }
}

#[test]
fn every_format_round_trips_dense_and_sparse_matrices() {
    let scratch = tmp("roundtrip");
    let dir = scratch.path();
    for (k, (r, c, density)) in [
        (7, 5, 0.9),
        (40, 30, 0.05),
        (1, 1, 1.0),
        (3, 4, 0.0),
        (50, 1, 0.5),
    ]
    .into_iter()
    .enumerate()
    {
        let x = random(r, c, density, k as u64);
        for fmt in ["text", "csv", "mm", "binary"] {
            for header in [false, true] {
                if header && fmt != "csv" {
                    continue;
                }
                let p = dir.join(format!("sub/{k}/{fmt}{header}.out"));
                let w = WriteOptions {
                    format: Some(fmt.into()),
                    header: Some(header),
                    sep: header.then(|| ";".into()),
                    ..Default::default()
                };
                write_matrix(&p, &x, &w).unwrap();
                // the format, size and CSV settings come from the .mtd or the file
                let y = read_matrix(&p, &ReadOptions::default());
                assert_same(&x, &y);
                let y = read_matrix(
                    &p,
                    &ReadOptions {
                        format: Some(fmt.into()),
                        ..Default::default()
                    },
                );
                assert_same(&x, &y);
            }
        }
    }
}

#[test]
fn files_are_written_as_systemds_writes_them() {
    let scratch = tmp("exact");
    let dir = scratch.path();
    let x = Matrix::from_dense(
        Dense::from_shape_vec((2, 3), vec![1.0, 0.0, 3.0, 0.0, 0.0, 6.0]).unwrap(),
    );
    let z = Matrix::from_dense(Dense::zeros((2, 3)));
    let text = |p: &Path| std::fs::read_to_string(p).unwrap();
    let fmt = |f: &str| WriteOptions {
        format: Some(f.into()),
        ..Default::default()
    };
    write_matrix(&dir.join("X.txt"), &x, &WriteOptions::default()).unwrap();
    assert_eq!(text(&dir.join("X.txt")), "1 1 1.0\n1 3 3.0\n2 3 6.0\n");
    write_matrix(&dir.join("Z.txt"), &z, &WriteOptions::default()).unwrap();
    assert_eq!(text(&dir.join("Z.txt")), "0 0 0\n");
    write_matrix(&dir.join("X.csv"), &x, &fmt("csv")).unwrap();
    assert_eq!(text(&dir.join("X.csv")), "1.0,0,3.0\n0,0,6.0\n");
    let h = WriteOptions {
        format: Some("csv".into()),
        header: Some(true),
        sep: Some(";".into()),
        ..Default::default()
    };
    write_matrix(&dir.join("Xh.csv"), &x, &h).unwrap();
    assert_eq!(text(&dir.join("Xh.csv")), "C1;C2;C3\n1.0;0;3.0\n0;0;6.0\n");
    write_matrix(&dir.join("X.mm"), &x, &fmt("mm")).unwrap();
    assert_eq!(
        text(&dir.join("X.mm")),
        "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 1.0\n1 3 3.0\n2 3 6.0\n"
    );
    assert!(!mtd_path(&dir.join("X.mm")).exists());
    write_matrix(&dir.join("Z.mm"), &z, &fmt("mm")).unwrap();
    assert_eq!(
        text(&dir.join("Z.mm")),
        "%%MatrixMarket matrix coordinate real general\n2 3 0\n0 0 0\n"
    );
    let m = text(&mtd_path(&dir.join("Xh.csv")));
    let without_created: Vec<&str> = m
        .lines()
        .filter(|l| !l.contains("\"created\"") && !l.contains("\"author\""))
        .collect();
    assert_eq!(
        without_created.join("\n"),
        "{\n    \"data_type\": \"matrix\",\n    \"value_type\": \"double\",\n    \"rows\": 2,\n    \
         \"cols\": 3,\n    \"nnz\": 3,\n    \"format\": \"csv\",\n    \"header\": true,\n    \
         \"sep\": \";\",\n}"
    );
    for (v, want, vt) in [
        (ScalarValue::Double(3.5), "3.5", "double"),
        (ScalarValue::Int(3), "3", "int"),
        (ScalarValue::Bool(true), "true", "boolean"),
        (
            ScalarValue::Str("hello world".into()),
            "hello world",
            "string",
        ),
    ] {
        let p = dir.join(format!("s-{vt}.txt"));
        write_scalar(&p, &v).unwrap();
        assert_eq!(text(&p), want);
        assert!(text(&mtd_path(&p)).contains(&format!("\"value_type\": \"{vt}\"")));
        // the value type comes from the .mtd
        let back = read(&p, &ReadOptions::default()).unwrap();
        assert!(matches!(back, Data::Scalar(ref s) if *s == v), "{back:?}");
    }
}

#[test]
fn csv_read_options_are_systemds_s() {
    let scratch = tmp("csvopts");
    let dir = scratch.path();
    let p = dir.join("a.csv");
    std::fs::write(&p, "a|b|c\n1| |3\nNA|5|\n").unwrap();
    let opts = ReadOptions {
        format: Some("csv".into()),
        header: Some(true),
        sep: Some("|".into()),
        default: Some(-1.0),
        na_strings: Some("NA".into()),
        ..Default::default()
    };
    let x = read_matrix(&p, &opts);
    assert_eq!(x.shape(), (2, 3));
    assert_eq!(
        [
            x.get(0, 0),
            x.get(0, 1),
            x.get(0, 2),
            x.get(1, 1),
            x.get(1, 2)
        ],
        [1.0, -1.0, 3.0, 5.0, -1.0]
    );
    assert!(x.get(1, 0).is_nan());
    let no_fill = ReadOptions {
        fill: Some(false),
        ..opts.clone()
    };
    let e = read(&p, &no_fill).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:2: empty field", p.display())),
        "{e}"
    );
    // a multi-character separator splits on the whole string
    std::fs::write(&p, "1::2\n3::4\n").unwrap();
    let x = read_matrix(
        &p,
        &ReadOptions {
            format: Some("csv".into()),
            sep: Some("::".into()),
            ..Default::default()
        },
    );
    assert_same(
        &x,
        &Matrix::from_dense(Dense::from_shape_vec((2, 2), vec![1.0, 2.0, 3.0, 4.0]).unwrap()),
    );
}

#[test]
fn format_comes_from_the_content_without_metadata() {
    let scratch = tmp("sniff");
    let dir = scratch.path();
    let cases = [
        ("a", "1,2\n3,4\n", (2, 2)),
        ("b", "1 1 5.0\n3 2 1.0\n", (3, 2)),
        (
            "c",
            "%%MatrixMarket matrix coordinate real general\n4 4 1\n2 2 1.0\n",
            (4, 4),
        ),
        ("d", "1.5\n2.5\n7\n", (3, 1)),
    ];
    for (name, body, shape) in cases {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        assert_eq!(
            read_matrix(&p, &ReadOptions::default()).shape(),
            shape,
            "{name}"
        );
    }
    // text cells in any order; a cell given twice keeps its last value; zeros are skipped
    let p = dir.join("e");
    std::fs::write(&p, "3 1 2.0\n1 2 4.0\n3 1 5.0\n2 2 0\n").unwrap();
    let x = read_matrix(
        &p,
        &ReadOptions {
            format: Some("text".into()),
            rows: Some(3),
            cols: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(
        (x.shape(), x.nnz(), x.get(2, 0), x.get(0, 1)),
        ((3, 2), 2, 5.0, 4.0)
    );
    // a folder of part files is read as their concatenation
    let d = dir.join("parts.csv");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("0-m-00000"), "1,2\n").unwrap();
    std::fs::write(d.join("0-m-00001"), "3,4\n5,6\n").unwrap();
    std::fs::write(d.join(".0-m-00000.crc"), "junk").unwrap();
    let x = read_matrix(&d, &ReadOptions::default());
    assert_eq!((x.shape(), x.get(2, 1)), ((3, 2), 6.0));
    // and replaced by a file when written again, as SystemDS does
    write_matrix(&d, &x, &WriteOptions::default()).unwrap();
    assert!(d.is_file());
    assert_same(&read_matrix(&d, &ReadOptions::default()), &x);
    // a folder of anything else is not removed
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "keep").unwrap();
    let e = write_matrix(&other, &x, &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("is a folder"), "{e}");
    assert!(other.join("notes.txt").is_file());
}

#[test]
fn bad_files_are_errors_with_file_and_line() {
    let scratch = tmp("bad");
    let dir = scratch.path();
    let p = dir.join("x.csv");
    let write = |body: &str, mtd: Option<&str>| {
        std::fs::write(&p, body).unwrap();
        match mtd {
            Some(m) => std::fs::write(mtd_path(&p), m).unwrap(),
            None => {
                let _ = std::fs::remove_file(mtd_path(&p));
            }
        }
    };
    let err = || read(&p, &ReadOptions::default()).unwrap_err().to_string();
    let name = p.display().to_string();
    let csv_mtd = |r: i64, c: i64| {
        format!("{{\"data_type\": \"matrix\", \"rows\": {r}, \"cols\": {c}, \"format\": \"csv\"}}")
    };
    // truncated: fewer rows than declared
    write("1,2\n3,4\n", Some(&csv_mtd(3, 2)));
    assert!(
        err().starts_with(&format!("{name}:2: the file ends after 2 rows")),
        "{}",
        err()
    );
    // a short row
    write("1,2\n3\n", Some(&csv_mtd(2, 2)));
    assert!(
        err().starts_with(&format!("{name}:2: 1 fields, expected 2")),
        "{}",
        err()
    );
    // more rows than declared
    write("1,2\n3,4\n5,6\n", Some(&csv_mtd(2, 2)));
    assert!(
        err().starts_with(&format!("{name}:3: more rows")),
        "{}",
        err()
    );
    // not a number
    write("1,x\n", None);
    assert!(
        err().starts_with(&format!("{name}:1: field 2 is 'x'")),
        "{}",
        err()
    );
    // text cell outside the declared size
    write(
        "1 1 1.0\n5 1 2.0\n",
        Some("{\"rows\": 2, \"cols\": 2, \"format\": \"text\"}"),
    );
    assert!(
        err().starts_with(&format!("{name}:2: row index 5 out of range 1..2")),
        "{}",
        err()
    );
    // unknown and unsupported formats
    write(
        "1,2\n",
        Some("{\"rows\": 1, \"cols\": 2, \"format\": \"parquet\"}"),
    );
    assert!(err().contains("unknown format \"parquet\""), "{}", err());
    write(
        "1,2\n",
        Some("{\"rows\": 1, \"cols\": 2, \"format\": \"libsvm\"}"),
    );
    assert!(err().contains("\"libsvm\" is not supported"), "{}", err());
    // absurd sizes are refused before anything is allocated
    write("1,2\n", Some(&csv_mtd(1 << 30, 1 << 30)));
    assert!(err().contains("needs about"), "{}", err());
    write(
        "1 1 1.0\n",
        Some("{\"rows\": 99999999999, \"cols\": 2, \"format\": \"text\"}"),
    );
    assert!(err().contains("out of range"), "{}", err());
    std::fs::write(
        &p,
        "%%MatrixMarket matrix array real general\n2000000000 2000000000\n1\n",
    )
    .unwrap();
    let _ = std::fs::remove_file(mtd_path(&p));
    assert!(err().contains("needs about"), "{}", err());
    // the statement and the metadata disagree
    write("1,2\n", Some(&csv_mtd(1, 2)));
    let e = read(
        &p,
        &ReadOptions {
            rows: Some(3),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("read gives rows=3 but the metadata file says 1"),
        "{e}"
    );
    // malformed metadata
    write("1,2\n", Some("{\n\"rows\": 1\n\"cols\": 2}"));
    assert!(err().contains("x.csv.mtd:3: not JSON"), "{}", err());
    // a missing file
    let e = read(&dir.join("nope"), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot open"), "{e}");
    // scalars
    std::fs::write(&p, "abc").unwrap();
    let e = read(
        &p,
        &ReadOptions {
            data_type: Some("scalar".into()),
            value_type: Some("double".into()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, format!("{name}:1: 'abc' is not a number"));
}

/// Binary files of several blocks, with sizes that are not multiples of the block size, dense,
/// sparse, ultra-sparse (also one-column) and empty blocks, read back with the block size of
/// their `.mtd`; a folder of part files (as SystemDS writes big outputs) reads as their union.
#[test]
fn binary_blocks_round_trip() {
    let scratch = tmp("binary");
    let dir = scratch.path();
    for (k, (r, c, density, block)) in [
        (1500, 3, 0.9, 1000),
        (2100, 1100, 0.001, 1000),
        (23, 17, 0.5, 5),
        (23, 17, 0.03, 4),
        (40, 1, 0.05, 7),
        (9, 9, 0.0, 4),
        (0, 5, 0.0, 4),
    ]
    .into_iter()
    .enumerate()
    {
        let x = random(r, c, density, 100 + k as u64);
        let p = dir.join(format!("m{k}.bin"));
        let nnz = binary::write(&p, &x, block).unwrap();
        let meta = Metadata {
            data_type: Some("matrix".into()),
            value_type: Some("double".into()),
            rows: Some(r as i64),
            cols: Some(c as i64),
            rows_in_block: Some(block as i64),
            cols_in_block: Some(block as i64),
            nnz: Some(nnz as i64),
            format: Some("binary".into()),
            ..Default::default()
        };
        mtd::write_metadata(&p, &meta).unwrap();
        assert_same(&x, &read_matrix(&p, &ReadOptions::default()));
        // the same blocks split over two part files in a folder
        if r > 0 {
            let top = Matrix::from_dense(x.to_dense().slice(ndarray::s![..r / 2, ..]).to_owned());
            let bottom =
                Matrix::from_dense(x.to_dense().slice(ndarray::s![r / 2.., ..]).to_owned());
            if (r / 2) % block == 0 {
                let f = dir.join(format!("f{k}.bin"));
                std::fs::create_dir_all(&f).unwrap();
                binary::write(&f.join("0-m-00000"), &top, block).unwrap();
                binary::write(&f.join("0-m-00001"), &bottom, block).unwrap();
                // the second file's blocks are numbered from 1: not the same matrix
                mtd::write_metadata(&f, &meta).unwrap();
                assert!(read(&f, &ReadOptions::default()).is_err());
            }
        }
    }
}

/// Damaged binary files are errors naming the file, never panics: truncations of a small file
/// (every seventh length), flipped bytes, a `.mtd` whose size or block size disagrees with the blocks, and other
/// SequenceFiles.
#[test]
fn bad_binary_files_are_errors() {
    let scratch = tmp("badbinary");
    let dir = scratch.path();
    let x = random(9, 7, 0.5, 5);
    let p = dir.join("x.bin");
    write_matrix(
        &p,
        &x,
        &WriteOptions {
            format: Some("binary".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let good = std::fs::read(&p).unwrap();
    let mtd_text = std::fs::read_to_string(mtd_path(&p)).unwrap();
    let q = dir.join("y.bin");
    let check = |bytes: &[u8], mtd_text: &str| -> Option<String> {
        std::fs::write(&q, bytes).unwrap();
        std::fs::write(mtd_path(&q), mtd_text).unwrap();
        read(&q, &ReadOptions::default())
            .err()
            .map(|e| e.to_string())
    };
    for n in (0..good.len()).step_by(7) {
        let e = check(&good[..n], &mtd_text).unwrap_or_else(|| panic!("truncated at {n}: read"));
        assert!(e.contains("y.bin"), "{e}");
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for _ in 0..60 {
        let mut b = good.clone();
        for _ in 0..rng.gen_range(1..4) {
            let k = rng.gen_range(0..b.len());
            b[k] ^= 1 << rng.gen_range(0..8);
        }
        // a flip in a value is a valid file; anything else must be an error, not a panic
        let _ = check(&b, &mtd_text);
    }
    let e = check(&good, &mtd_text.replace("\"rows\": 9", "\"rows\": 8")).unwrap();
    assert!(e.contains("block (1,1) is 9x7, expected 8x7"), "{e}");
    let e = check(
        &good,
        &mtd_text.replace("\"rows_in_block\": 1000", "\"rows_in_block\": 4"),
    )
    .unwrap();
    assert!(e.contains("block (1,1) is 9x7, expected 4x7"), "{e}");
    let mut frame = b"SEQ\x06".to_vec();
    for class in [
        "org.apache.hadoop.io.LongWritable",
        "org.apache.sysds.runtime.frame.data.FrameBlock",
    ] {
        frame.push(class.len() as u8);
        frame.extend(class.bytes());
    }
    frame.extend([0u8; 22]);
    let e = check(&frame, &mtd_text).unwrap();
    assert!(e.contains("a binary frame"), "{e}");
    let e = check(b"not a sequence file", &mtd_text).unwrap();
    assert!(e.contains("not a SystemDS binary file"), "{e}");
    let no_size = mtd_text.replace("\"rows\": 9,", "");
    let e = check(&good, &no_size).unwrap();
    assert!(e.contains("needs its size"), "{e}");
}
