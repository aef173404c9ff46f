//! SystemDS's `binary` format: a Hadoop SequenceFile (or a folder of them, SystemDS's part
//! files `0-m-00000`, ...) of `(MatrixIndexes, MatrixBlock)` records, one per block of
//! `rows_in_block x cols_in_block` cells (from the `.mtd`, default 1000x1000).
//!
//! The SequenceFile (version 6, uncompressed): `SEQ`, the version byte, the key and value
//! class names (Hadoop `Text`: a variable-length int and UTF-8 bytes), two bytes for the
//! compression flags, an int count of metadata pairs (each two `Text`s), then a 16-byte sync
//! marker. Each record is `int record length, int key length (16), key, value`; between
//! records a writer may put `int -1` and the sync marker again. All numbers big-endian.
//!
//! The key (`MatrixIndexes.write`): `long` block row and `long` block column, 1-based.
//! The value (`MatrixBlock.write`): `int rows, int cols, byte type`, then by type:
//! * 0, empty: nothing;
//! * 1, ultra-sparse: `int nnz`, then `(int i, int j, double v)` triples (`(int i, double v)`
//!   pairs for a one-column block), 0-based within the block;
//! * 2, sparse: `int nnz` (a `long` for blocks of more than 2^31-1 cells), then per row
//!   `int n` and `n` pairs `(int j, double v)`;
//! * 3, dense: `rows * cols` doubles, row-major;
//! * 4, deduplicated dense rows (embeddings): not read (a clear error).
//!
//! The writer picks the type as SystemDS does (`MatrixBlock.evalSparseFormatOnDisk`): empty
//! without non-zeros, else sparse when below density 0.4 and smaller on disk than dense,
//! ultra-sparse when also fewer non-zeros than rows, else dense. It writes one file of blocks
//! in row-major block order, streaming from the matrix's storage.

use super::{check_size, create, os_err, IoError};
use crate::matrix::{col, is_stored, zeros, Matrix};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The block size SystemDS uses when the `.mtd` gives none.
pub const DEFAULT_BLOCK: i64 = 1000;

const KEY_CLASS: &str = "org.apache.sysds.runtime.matrix.data.MatrixIndexes";
const VALUE_CLASS: &str = "org.apache.sysds.runtime.matrix.data.MatrixBlock";
const VERSION: u8 = 6;
/// Hadoop's `SequenceFile.SYNC_INTERVAL`: bytes between sync markers.
const SYNC_INTERVAL: u64 = 100 * 1024;
/// `MatrixBlock`'s basic header: rows, cols, type.
const HEADER: u64 = 9;

/// Whether the start of a file is a SequenceFile's magic.
pub(super) fn is_sequence_file(path: &Path) -> bool {
    let mut magic = [0u8; 3];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"SEQ"
}

/// A reader that counts bytes and turns an early end of file into an error naming the file.
struct In {
    r: BufReader<std::fs::File>,
    pos: u64,
    path: PathBuf,
}

impl In {
    fn err(&self, message: String) -> IoError {
        IoError::Invalid {
            path: self.path.display().to_string(),
            message: format!("at byte {}: {message}", self.pos),
        }
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], IoError> {
        let mut b = [0u8; N];
        match self.r.read_exact(&mut b) {
            Ok(()) => {
                self.pos += N as u64;
                Ok(b)
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.err(format!(
                "the file ends in the middle of {what} (truncated binary file?)"
            ))),
            Err(e) => Err(os_err("read", &self.path)(e)),
        }
    }

    fn byte(&mut self, what: &str) -> Result<u8, IoError> {
        Ok(self.bytes::<1>(what)?[0])
    }

    fn int(&mut self, what: &str) -> Result<i32, IoError> {
        Ok(i32::from_be_bytes(self.bytes(what)?))
    }

    fn long(&mut self, what: &str) -> Result<i64, IoError> {
        Ok(i64::from_be_bytes(self.bytes(what)?))
    }

    fn double(&mut self, what: &str) -> Result<f64, IoError> {
        Ok(f64::from_be_bytes(self.bytes(what)?))
    }

    /// An int, or `None` at a clean end of file.
    fn int_or_end(&mut self) -> Result<Option<i32>, IoError> {
        let mut b = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.r.read(&mut b[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => {
                    return Err(self.err("the file ends in the middle of a record length".into()))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(os_err("read", &self.path)(e)),
            }
        }
        self.pos += 4;
        Ok(Some(i32::from_be_bytes(b)))
    }

    /// Hadoop's `WritableUtils.readVLong`.
    fn vlong(&mut self, what: &str) -> Result<i64, IoError> {
        let first = self.byte(what)? as i8;
        if first >= -112 {
            return Ok(first as i64);
        }
        let len = if first < -120 {
            -119 - first as i32
        } else {
            -111 - first as i32
        };
        let mut v: i64 = 0;
        for _ in 0..len - 1 {
            v = (v << 8) | self.byte(what)? as i64;
        }
        Ok(if first < -120 { !v } else { v })
    }

    /// A Hadoop `Text`: a vlong length and UTF-8 bytes.
    fn text(&mut self, what: &str) -> Result<String, IoError> {
        let n = self.vlong(what)?;
        if !(0..=1 << 20).contains(&n) {
            return Err(self.err(format!("{what} has an impossible length {n}")));
        }
        let mut b = vec![0u8; n as usize];
        match self.r.read_exact(&mut b) {
            Ok(()) => self.pos += n as u64,
            Err(_) => return Err(self.err(format!("the file ends in the middle of {what}"))),
        }
        String::from_utf8(b).map_err(|_| self.err(format!("{what} is not UTF-8")))
    }
}

/// Where the cells of the matrix being read go: a dense array, or triplets for a sparse one.
enum Sink {
    Dense(crate::matrix::Dense),
    Triplets(Vec<(usize, usize, f64)>),
}

impl Sink {
    fn set(&mut self, i: usize, j: usize, v: f64) {
        match self {
            Sink::Dense(d) => d[(i, j)] = v,
            Sink::Triplets(t) => {
                if is_stored(v) {
                    t.push((i, j, v))
                }
            }
        }
    }
}

/// Reads a binary matrix of `rows x cols` from its part files, with blocks of
/// `brows x bcols`.
pub(super) fn read(
    path: &Path,
    parts: &[PathBuf],
    (rows, cols): (i64, i64),
    (brows, bcols): (i64, i64),
    nnz: Option<i64>,
) -> Result<Matrix, IoError> {
    if brows <= 0 || bcols <= 0 {
        return Err(IoError::Invalid {
            path: path.display().to_string(),
            message: format!("the block size {brows}x{bcols} of the metadata is not positive"),
        });
    }
    let nnz = nnz.filter(|&n| n >= 0);
    check_size(path, rows, cols, nnz.unwrap_or(rows.saturating_mul(cols)))?;
    let (r, c) = (rows as usize, cols as usize);
    let sparse = nnz.is_some_and(|n| crate::matrix::prefers_sparse(r, c, n as usize));
    let mut sink = if sparse {
        Sink::Triplets(Vec::with_capacity(nnz.unwrap_or(0) as usize))
    } else {
        Sink::Dense(zeros(r, c))
    };
    let mut seen = std::collections::HashSet::new();
    let mut found = 0u64;
    for part in parts {
        found += read_part(part, (rows, cols), (brows, bcols), &mut sink, &mut seen)?;
    }
    // SystemDS writes every block (an all-zero matrix as its first block alone): blocks missing
    // while non-zeros the .mtd declares are missing too mean a truncated or partial file
    let blocks = ((rows + brows - 1) / brows) as u64 * ((cols + bcols - 1) / bcols) as u64;
    if let Some(n) = nnz.filter(|&n| (seen.len() as u64) < blocks && found < n as u64) {
        return Err(IoError::Invalid {
            path: path.display().to_string(),
            message: format!(
                "holds {} of the {blocks} blocks and {found} of the {n} non-zeros its .mtd \
                 declares (a truncated or partial file?)",
                seen.len()
            ),
        });
    }
    Ok(match sink {
        Sink::Dense(d) => Matrix::from_dense(d),
        Sink::Triplets(t) => Matrix::from_triplets(r, c, &t),
    })
}

/// Reads the blocks of one SequenceFile into `sink`; returns the non-zeros read.
fn read_part(
    part: &Path,
    (rows, cols): (i64, i64),
    (brows, bcols): (i64, i64),
    sink: &mut Sink,
    seen: &mut std::collections::HashSet<(i64, i64)>,
) -> Result<u64, IoError> {
    let file = std::fs::File::open(part).map_err(os_err("open", part))?;
    let mut inp = In {
        r: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        path: part.to_path_buf(),
    };
    let magic: [u8; 3] = inp.bytes("the SequenceFile header")?;
    if &magic != b"SEQ" {
        return Err(inp
            .err("not a SystemDS binary file (a Hadoop SequenceFile starts with \"SEQ\")".into()));
    }
    let version = inp.byte("the SequenceFile header")?;
    if version != VERSION {
        return Err(inp.err(format!(
            "SequenceFile version {version} is not supported (SystemDS writes version {VERSION})"
        )));
    }
    let key = inp.text("the key class name")?;
    let value = inp.text("the value class name")?;
    if !value.ends_with(".MatrixBlock") || !key.ends_with(".MatrixIndexes") {
        let what = if value.ends_with("FrameBlock") {
            "a binary frame".to_string()
        } else if value.contains("Tensor") || key.contains("Tensor") {
            "a binary tensor".to_string()
        } else {
            format!("records of {key} and {value}")
        };
        return Err(inp.err(format!(
            "holds {what}; spores reads binary matrices ({KEY_CLASS}, {VALUE_CLASS})"
        )));
    }
    let compressed = inp.byte("the SequenceFile header")? != 0;
    let block_compressed = inp.byte("the SequenceFile header")? != 0;
    if compressed || block_compressed {
        let codec = inp.text("the codec class name")?;
        return Err(inp.err(format!(
            "the SequenceFile is compressed ({codec}); spores reads uncompressed binary files"
        )));
    }
    let pairs = inp.int("the SequenceFile metadata")?;
    if pairs < 0 {
        return Err(inp.err(format!("negative metadata count {pairs}")));
    }
    for _ in 0..pairs {
        inp.text("the SequenceFile metadata")?;
        inp.text("the SequenceFile metadata")?;
    }
    let sync: [u8; 16] = inp.bytes("the sync marker")?;
    let (nbr, nbc) = (
        (rows + brows - 1) / brows.max(1),
        (cols + bcols - 1) / bcols.max(1),
    );
    let mut found = 0u64;
    let mut set = |i: usize, j: usize, v: f64| {
        found += u64::from(v != 0.0);
        sink.set(i, j, v)
    };
    loop {
        let Some(mut len) = inp.int_or_end()? else {
            return Ok(found);
        };
        if len == -1 {
            let s: [u8; 16] = inp.bytes("a sync marker")?;
            if s != sync {
                return Err(
                    inp.err("a sync marker differs from the header's (corrupt file)".into())
                );
            }
            match inp.int_or_end()? {
                Some(l) => len = l,
                None => return Ok(found),
            }
        }
        // the record's end: its length counts the key and the value, not the key's length
        let end = inp.pos + 4 + len.max(0) as u64;
        let key_len = inp.int("a record")?;
        if key_len != 16 || len < 16 {
            return Err(inp.err(format!(
                "a record of {len} bytes with a key of {key_len} (expected a 16-byte MatrixIndexes)"
            )));
        }
        let (bi, bj) = (inp.long("a block index")?, inp.long("a block index")?);
        if !(1..=nbr).contains(&bi) || !(1..=nbc).contains(&bj) {
            return Err(inp.err(format!(
                "block ({bi},{bj}) is outside a {rows}x{cols} matrix of {brows}x{bcols} blocks \
                 (does the .mtd give its size and block size?)"
            )));
        }
        if !seen.insert((bi, bj)) {
            return Err(inp.err(format!("block ({bi},{bj}) occurs twice")));
        }
        let want_r = brows.min(rows - (bi - 1) * brows);
        let want_c = bcols.min(cols - (bj - 1) * bcols);
        let (br, bc) = (inp.int("a block header")?, inp.int("a block header")?);
        if i64::from(br) != want_r || i64::from(bc) != want_c {
            return Err(inp.err(format!(
                "block ({bi},{bj}) is {br}x{bc}, expected {want_r}x{want_c} from the matrix \
                 size {rows}x{cols} and block size {brows}x{bcols} of the .mtd"
            )));
        }
        let (r0, c0) = (((bi - 1) * brows) as usize, ((bj - 1) * bcols) as usize);
        let (br, bc) = (br as usize, bc as usize);
        // the bytes the value may still take, to reject impossible counts before looping
        let room = |inp: &In| end.saturating_sub(inp.pos);
        let kind = inp.byte("a block header")?;
        match kind {
            0 => {}
            1 => {
                let n = inp.int("an ultra-sparse block")?;
                let each = if bc > 1 { 16 } else { 12 };
                if n < 0 || n as u64 * each > room(&inp) {
                    return Err(inp.err(format!("block ({bi},{bj}) claims {n} non-zeros")));
                }
                for _ in 0..n {
                    let i = inp.int("an ultra-sparse block")?;
                    let j = if bc > 1 {
                        inp.int("an ultra-sparse block")?
                    } else {
                        0
                    };
                    let v = inp.double("an ultra-sparse block")?;
                    if i < 0 || j < 0 || i as usize >= br || j as usize >= bc {
                        return Err(inp.err(format!(
                            "cell ({i},{j}) is outside block ({bi},{bj}) of {br}x{bc}"
                        )));
                    }
                    set(r0 + i as usize, c0 + j as usize, v);
                }
            }
            2 => {
                let n = if (br as u64) * (bc as u64) > i32::MAX as u64 {
                    inp.long("a sparse block")?
                } else {
                    i64::from(inp.int("a sparse block")?)
                };
                if n < 0 || n as u64 * 12 + br as u64 * 4 > room(&inp) {
                    return Err(inp.err(format!("block ({bi},{bj}) claims {n} non-zeros")));
                }
                for i in 0..br {
                    let k = inp.int("a sparse block")?;
                    if k < 0 || k as usize > bc {
                        return Err(inp.err(format!(
                            "row {i} of block ({bi},{bj}) claims {k} non-zeros in {bc} columns"
                        )));
                    }
                    for _ in 0..k {
                        let j = inp.int("a sparse block")?;
                        let v = inp.double("a sparse block")?;
                        if j < 0 || j as usize >= bc {
                            return Err(inp.err(format!(
                                "column {j} is outside block ({bi},{bj}) of {br}x{bc}"
                            )));
                        }
                        set(r0 + i, c0 + j as usize, v);
                    }
                }
            }
            3 => {
                if (br * bc) as u64 * 8 > room(&inp) {
                    return Err(inp.err(format!(
                        "dense block ({bi},{bj}) of {br}x{bc} does not fit its record of {len} bytes"
                    )));
                }
                for i in 0..br {
                    for j in 0..bc {
                        let v = inp.double("a dense block")?;
                        set(r0 + i, c0 + j, v);
                    }
                }
            }
            4 => {
                return Err(inp.err(format!(
                    "block ({bi},{bj}) is a deduplicated dense block (embeddings), which spores \
                     does not read"
                )))
            }
            k => return Err(inp.err(format!("block ({bi},{bj}) has an unknown type {k}"))),
        }
        if inp.pos != end {
            return Err(inp.err(format!(
                "block ({bi},{bj}) ends {} bytes from where its record length says",
                inp.pos as i64 - end as i64
            )));
        }
    }
}

/// The encoding SystemDS gives a block with these dimensions and non-zeros.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Empty,
    UltraSparse,
    Sparse,
    Dense,
}

/// `MatrixBlock.write`'s choice of encoding, and the value's size in bytes.
fn kind(r: u64, c: u64, nnz: u64) -> (Kind, u64) {
    let long_nnz = r * c > i32::MAX as u64;
    let ultra = HEADER + 4 + nnz * if c > 1 { 16 } else { 12 };
    let sparse = HEADER + if long_nnz { 8 } else { 4 } + r * 4 + nnz * 12;
    let dense = HEADER + r * c * 8;
    if nnz == 0 {
        return (Kind::Empty, HEADER);
    }
    let sparse_dst = (nnz as f64 / r as f64 / c as f64) < crate::matrix::SPARSE_THRESHOLD
        && (sparse < dense || ultra < dense);
    if sparse_dst && nnz < r {
        (Kind::UltraSparse, ultra)
    } else if sparse_dst {
        (Kind::Sparse, sparse)
    } else {
        (Kind::Dense, dense)
    }
}

/// A writer that counts bytes.
struct Out<W: Write> {
    w: W,
    pos: u64,
}

impl<W: Write> Out<W> {
    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.pos += b.len() as u64;
        self.w.write_all(b)
    }
    fn int(&mut self, v: i32) -> std::io::Result<()> {
        self.put(&v.to_be_bytes())
    }
    fn long(&mut self, v: i64) -> std::io::Result<()> {
        self.put(&v.to_be_bytes())
    }
    fn double(&mut self, v: f64) -> std::io::Result<()> {
        self.put(&v.to_be_bytes())
    }
    fn text(&mut self, s: &str) -> std::io::Result<()> {
        // class names are shorter than 128 bytes: a one-byte vlong
        debug_assert!(s.len() < 128);
        self.put(&[s.len() as u8])?;
        self.put(s.as_bytes())
    }
}

/// The cells of one block of `x`, row by row: `f(i, j, v)` for the stored cells (0-based within
/// the block); a dense matrix visits every cell.
fn each_cell(
    x: &Matrix,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    mut f: impl FnMut(usize, usize, f64) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match x {
        Matrix::Dense(d) => {
            for i in r0..r1 {
                for j in c0..c1 {
                    f(i - r0, j - c0, d[(i, j)])?;
                }
            }
        }
        Matrix::Sparse(s) => {
            for i in r0..r1 {
                let row = s.outer_view(i).expect("row in range");
                let (idx, vals) = (row.indices(), row.data());
                let lo = idx.partition_point(|&j| col(j) < c0);
                let hi = idx.partition_point(|&j| col(j) < c1);
                for k in lo..hi {
                    f(i - r0, col(idx[k]) - c0, vals[k])?;
                }
            }
        }
    }
    Ok(())
}

/// Writes `x` as one SequenceFile of `block x block` blocks (none for a matrix without rows
/// or columns); returns the non-zeros written.
pub(super) fn write(path: &Path, x: &Matrix, block: usize) -> Result<u64, IoError> {
    let mut out = Out {
        w: create(path)?,
        pos: 0,
    };
    let io = os_err("write", path);
    // a sync marker that depends only on the file name, so that output is deterministic
    let mut sync = [0u8; 16];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.to_string_lossy().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    for (k, s) in sync.iter_mut().enumerate() {
        h = (h ^ k as u64).wrapping_mul(0x100_0000_01b3);
        *s = (h >> 32) as u8;
    }
    let header = |out: &mut Out<_>| -> std::io::Result<()> {
        out.put(b"SEQ")?;
        out.put(&[VERSION])?;
        out.text(KEY_CLASS)?;
        out.text(VALUE_CLASS)?;
        out.put(&[0, 0])?;
        out.int(0)?;
        out.put(&sync)
    };
    header(&mut out).map_err(&io)?;
    let mut last_sync = out.pos;
    let (rows, cols) = x.shape();
    let mut total = 0u64;
    for r0 in (0..rows).step_by(block) {
        let r1 = (r0 + block).min(rows);
        for c0 in (0..cols).step_by(block) {
            let c1 = (c0 + block).min(cols);
            let (br, bc) = ((r1 - r0) as u64, (c1 - c0) as u64);
            let mut nnz = 0u64;
            each_cell(x, (r0, r1), (c0, c1), |_, _, v| {
                nnz += u64::from(v != 0.0);
                Ok(())
            })
            .map_err(&io)?;
            total += nnz;
            let (kind, size) = kind(br, bc, nnz);
            if out.pos >= last_sync + SYNC_INTERVAL {
                out.int(-1).map_err(&io)?;
                out.put(&sync).map_err(&io)?;
                last_sync = out.pos;
            }
            let record = (|| -> std::io::Result<()> {
                out.int(i32::try_from(16 + size).map_err(std::io::Error::other)?)?;
                out.int(16)?;
                out.long((r0 / block + 1) as i64)?;
                out.long((c0 / block + 1) as i64)?;
                out.int(br as i32)?;
                out.int(bc as i32)?;
                match kind {
                    Kind::Empty => out.put(&[0]),
                    Kind::UltraSparse => {
                        out.put(&[1])?;
                        out.int(nnz as i32)?;
                        each_cell(x, (r0, r1), (c0, c1), |i, j, v| {
                            if v == 0.0 {
                                return Ok(());
                            }
                            out.int(i as i32)?;
                            if bc > 1 {
                                out.int(j as i32)?;
                            }
                            out.double(v)
                        })
                    }
                    Kind::Sparse => {
                        out.put(&[2])?;
                        if br * bc > i32::MAX as u64 {
                            out.long(nnz as i64)?;
                        } else {
                            out.int(nnz as i32)?;
                        }
                        for i in r0..r1 {
                            let mut n = 0;
                            each_cell(x, (i, i + 1), (c0, c1), |_, _, v| {
                                n += i32::from(v != 0.0);
                                Ok(())
                            })?;
                            out.int(n)?;
                            each_cell(x, (i, i + 1), (c0, c1), |_, j, v| {
                                if v == 0.0 {
                                    return Ok(());
                                }
                                out.int(j as i32)?;
                                out.double(v)
                            })?;
                        }
                        Ok(())
                    }
                    Kind::Dense => {
                        out.put(&[3])?;
                        for i in r0..r1 {
                            let mut next = c0;
                            each_cell(x, (i, i + 1), (c0, c1), |_, j, v| {
                                for _ in next..c0 + j {
                                    out.double(0.0)?;
                                }
                                next = c0 + j + 1;
                                out.double(v)
                            })?;
                            for _ in next..c1 {
                                out.double(0.0)?;
                            }
                        }
                        Ok(())
                    }
                }
            })();
            record.map_err(&io)?;
        }
    }
    out.w.flush().map_err(&io)?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_systemds_choice() {
        assert_eq!(kind(3, 4, 0).0, Kind::Empty);
        assert_eq!(kind(3, 4, 12).0, Kind::Dense);
        assert_eq!(kind(1000, 1000, 10).0, Kind::UltraSparse);
        assert_eq!(kind(1000, 1000, 5000).0, Kind::Sparse);
        assert_eq!(kind(1000, 1, 5).0, Kind::UltraSparse);
        assert_eq!(kind(1000, 1000, 500_000).0, Kind::Dense);
    }
}
