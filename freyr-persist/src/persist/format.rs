//! The byte framing of a save or an export: magic, format version, body length, body, checksum;
//! little-endian integers and length-prefixed blobs inside the body.

use super::LoadError;

/// The save format version this build writes and reads.
///
/// 2: the per-type column encoding (serde or raw bytes) and the eight-lane checksum.
/// 3: the checksum's lanes run over the body from its first byte and the header is folded in
/// last, so a save hashes each piece as it writes it.
/// 4: the checksum is a CRC-64/NVME of the magic and version, the body, then the body length
/// (see `CRC`).
/// 5: a save's body ends with the change stamps of every archetype's chunks, a section of its
/// own after the archetypes (an export's body is unchanged).
pub const FORMAT_VERSION: u32 = 5;
/// Header: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// Trailer: the checksum (8).
const TRAILER: usize = 8;
/// The file checksum: CRC-64/NVME (polynomial `0xAD93D23594C93659`) of the header's magic and
/// version, the body, and then the header's body length. A CRC of degree 64 catches every change
/// confined to 64 consecutive bits of the string it sums (so any single flipped bit, and any
/// changed 8-byte word), whatever its length; other damage is missed with odds of about 2^-64.
/// Every run of 64 consecutive bits of the file lies in that string in the same order, except
/// runs that touch the body length: a changed length no longer matches the file's size, which
/// [`frame`] reports before any checksum is computed.
///
/// The length comes last because it is known last: a save feeds the CRC each piece of the body
/// as it writes it, and a load as it copies it, while the piece is in cache. The crate picks its
/// carry-less-multiply kernel at run time, so a generic x86-64 build gets it too.
const CRC: crc_fast::CrcAlgorithm = crc_fast::CrcAlgorithm::Crc64Nvme;
/// Header bytes summed before the body: the magic and the version.
const LEADING: usize = 12;
/// The fewest bytes one CRC update takes, but the last: an update costs a fixed setup and fold
/// (a 1M save is 200,000 chunk pieces of 4–6 KB, whose updates one by one took as long as the
/// copies), so pieces are fed a few at a time, still in the cache.
const PIECE: usize = 32 * 1024;

/// A CRC fed the header's magic and version, ready for the body.
fn started(header: &[u8]) -> crc_fast::Digest {
    let mut crc = crc_fast::Digest::new(CRC);
    crc.update(&header[..LEADING]);
    crc
}

/// The checksum, from a CRC fed the magic, version and whole body, and the header.
fn finished(mut crc: crc_fast::Digest, header: &[u8; HEADER]) -> u64 {
    crc.update(&header[LEADING..]);
    crc.finalize()
}

/// Builds a framed file: header, then the body written through [`Writer`], then the checksum.
/// The checksum is fed as the body grows ([`absorb`](Writer::absorb)), so a large save hashes
/// each piece while it is still in cache.
pub struct Writer {
    /// The bytes written so far.
    pub out: Vec<u8>,
    /// The CRC of the magic, the version and the body bytes before `hashed`.
    crc: crc_fast::Digest,
    /// Offset of the first body byte not yet fed to the checksum.
    hashed: usize,
}

impl Writer {
    /// A writer whose buffer has room for `capacity` bytes (a guess: it grows past it).
    pub fn new(magic: &[u8; 8], capacity: usize) -> Writer {
        Writer::reuse(magic, Vec::new(), capacity)
    }

    /// As [`new`](Writer::new), writing into `out`'s allocation (cleared first).
    pub fn reuse(magic: &[u8; 8], mut out: Vec<u8>, capacity: usize) -> Writer {
        out.clear();
        out.reserve(capacity.saturating_add(HEADER + TRAILER));
        out.extend_from_slice(magic);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        Writer {
            crc: started(&out),
            out,
            hashed: HEADER,
        }
    }

    /// Feeds the checksum the bytes written so far once they are at least `PIECE` long. Only
    /// between writes: a blob's length is patched after its bytes, so no blob may be open.
    pub fn absorb(&mut self) {
        if self.out.len() - self.hashed >= PIECE {
            self.absorb_all();
        }
    }

    /// Feeds the checksum every byte written so far (as [`absorb`](Writer::absorb)).
    fn absorb_all(&mut self) {
        self.crc.update(&self.out[self.hashed..]);
        self.hashed = self.out.len();
    }

    /// Writes `v`, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes `v`, little-endian.
    pub fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes a length, then each value, little-endian.
    pub fn u32s(&mut self, vs: &[u32]) {
        self.u64(vs.len() as u64);
        // On a little-endian target the words are their bytes: one copy (the entity slots of
        // a 1M save are 4 MB).
        #[cfg(target_endian = "little")]
        self.out.extend_from_slice(bytemuck::cast_slice(vs));
        #[cfg(not(target_endian = "little"))]
        self.out.extend(vs.iter().flat_map(|v| v.to_le_bytes()));
    }

    /// Writes a count, then the words (little-endian).
    pub fn u64s(&mut self, vs: &[u64]) {
        self.u64(vs.len() as u64);
        #[cfg(target_endian = "little")]
        self.out.extend_from_slice(bytemuck::cast_slice(vs));
        #[cfg(not(target_endian = "little"))]
        self.out.extend(vs.iter().flat_map(|v| v.to_le_bytes()));
    }

    /// Writes a length, then the bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.u64(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    /// A length-prefixed blob whose bytes `fill` appends.
    pub fn blob(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let at = self.out.len();
        self.u64(0);
        fill(&mut self.out);
        let len = (self.out.len() - at - 8) as u64;
        self.out[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }

    /// Fills in the body length and appends the checksum.
    pub fn finish(mut self) -> Vec<u8> {
        let body = (self.out.len() - HEADER) as u64;
        self.out[12..20].copy_from_slice(&body.to_le_bytes());
        self.absorb_all();
        let header: &[u8; HEADER] = self.out[..HEADER].try_into().expect("the header");
        let sum = finished(self.crc, header);
        self.out.extend_from_slice(&sum.to_le_bytes());
        self.out
    }
}

/// A file whose framing (magic, length) is checked, but not yet its checksum or version.
pub struct Framed<'a> {
    header: &'a [u8; HEADER],
    /// The body, between header and checksum.
    pub body: &'a [u8],
    stored: u64,
}

/// Checks a file's magic and length against its header.
pub fn frame<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<Framed<'a>, LoadError> {
    if bytes.len() < 8 || &bytes[..8] != magic {
        let found = bytes.len().min(8);
        return Err(match bytes[..found] == magic[..found] {
            true => LoadError::Truncated {
                expected: HEADER + TRAILER,
                found: bytes.len(),
            },
            false => LoadError::NotAFreyrFile,
        });
    }
    if bytes.len() < HEADER + TRAILER {
        return Err(LoadError::Truncated {
            expected: HEADER + TRAILER,
            found: bytes.len(),
        });
    }
    let body = u64::from_le_bytes(bytes[12..20].try_into().expect("eight bytes"));
    let expected = (HEADER + TRAILER) as u64 + body;
    if bytes.len() as u64 != expected {
        return Err(LoadError::Truncated {
            expected: usize::try_from(expected).unwrap_or(usize::MAX),
            found: bytes.len(),
        });
    }
    let end = bytes.len() - TRAILER;
    Ok(Framed {
        header: bytes[..HEADER].try_into().expect("the header"),
        body: &bytes[HEADER..end],
        stored: u64::from_le_bytes(bytes[end..].try_into().expect("eight bytes")),
    })
}

impl<'a> Framed<'a> {
    /// The file's format version is the one this build reads.
    pub fn check_version(&self) -> Result<(), LoadError> {
        let version = u32::from_le_bytes(self.header[8..12].try_into().expect("four bytes"));
        match version == FORMAT_VERSION {
            true => Ok(()),
            false => Err(LoadError::UnsupportedFormat {
                found: version,
                supported: FORMAT_VERSION,
            }),
        }
    }

    /// A checksum of the body computed as it is read.
    pub fn verifier(&self) -> Verifier<'a> {
        Verifier {
            body: self.body,
            crc: started(self.header),
            hashed: 0,
        }
    }
}

/// The checksum of a body, fed in order as its bytes are read (see [`Verifier::read`]), so a
/// load hashes each piece it copies while the piece is in cache.
pub struct Verifier<'a> {
    body: &'a [u8],
    /// The CRC of the magic, the version and the body's first `hashed` bytes.
    crc: crc_fast::Digest,
    /// Bytes of the body already fed.
    hashed: usize,
}

impl Verifier<'_> {
    /// `piece`, a part of the body, was just read: feeds the body up to its end, once that is at
    /// least `PIECE` bytes past what was fed. Pieces may skip bytes (they are fed with the next piece) and should come in order (an
    /// earlier one feeds nothing); a slice from elsewhere feeds nothing, or bytes the next
    /// pieces would have fed: the sum is the same either way, since the body is always fed in
    /// order, once.
    pub fn read(&mut self, piece: &[u8]) {
        let start = self.body.as_ptr().addr();
        let end = piece
            .as_ptr()
            .addr()
            .wrapping_add(piece.len())
            .wrapping_sub(start);
        if end > self.body.len() || end <= self.hashed || end - self.hashed < PIECE {
            return;
        }
        self.crc.update(&self.body[self.hashed..end]);
        self.hashed = end;
    }

    /// Feeds the rest of the body and compares the sum with the stored one.
    pub fn finish(mut self, framed: &Framed<'_>) -> Result<(), LoadError> {
        self.crc.update(&self.body[self.hashed..]);
        let computed = finished(self.crc, framed.header);
        match computed == framed.stored {
            true => Ok(()),
            false => Err(LoadError::ChecksumMismatch {
                stored: framed.stored,
                computed,
            }),
        }
    }
}

/// Checks a framed file's magic, length, checksum and version; returns its body.
pub fn open<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<&'a [u8], LoadError> {
    let framed = frame(bytes, magic)?;
    framed.verifier().finish(&framed)?;
    framed.check_version()?;
    Ok(framed.body)
}

/// Reads a body; every read is bounds-checked (a checked body is still untrusted input).
pub struct Reader<'a> {
    /// The bytes not read yet.
    pub rest: &'a [u8],
}

fn corrupt(what: &'static str) -> LoadError {
    LoadError::Corrupt { what }
}

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
        if self.rest.len() < n {
            return Err(corrupt(what));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    /// Reads a `u32`; `what` names the field in the error.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("four bytes")))
    }

    /// Reads a `u64`; `what` names the field in the error.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// A count of items of `size` bytes each that must fit in the rest of the body.
    pub fn count(&mut self, size: usize, what: &'static str) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n.checked_mul(size).is_some_and(|b| b <= self.rest.len()) => Ok(n),
            _ => Err(corrupt(what)),
        }
    }

    /// Reads a length, then that many `u32`s.
    pub fn u32s(&mut self, what: &'static str) -> Result<Vec<u32>, LoadError> {
        let n = self.count(4, what)?;
        let bytes = self.take(n * 4, what)?;
        // One pass into a vector allocated once at its exact length (on a little-endian target
        // a plain copy): a zero-filled vector copied over would write a 1M save's 4 MB of
        // slots twice.
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("four bytes")))
            .collect())
    }

    /// A count, then that many little-endian `u64`s.
    pub fn u64s(&mut self, what: &'static str) -> Result<Vec<u64>, LoadError> {
        let n = self.count(8, what)?;
        Ok(self.words::<8>(n, what)?.map(u64::from_le_bytes).collect())
    }

    /// `n` items of `N` bytes each.
    pub fn words<const N: usize>(
        &mut self,
        n: usize,
        what: &'static str,
    ) -> Result<impl ExactSizeIterator<Item = [u8; N]> + 'a, LoadError> {
        let bytes = self.take(n.checked_mul(N).ok_or(corrupt(what))?, what)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| <[u8; N]>::try_from(c).expect("N bytes")))
    }

    /// Reads a length, then that many bytes.
    pub fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], LoadError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    /// Checks that every byte was read.
    pub fn end(&self) -> Result<(), LoadError> {
        match self.rest.is_empty() {
            true => Ok(()),
            false => Err(corrupt("bytes after the end of the body")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CRC, HEADER, LEADING, PIECE, Writer, finished, frame, open, started};

    /// The checksum of `header` and `body`, the body fed in one piece.
    fn checksum(header: &[u8; HEADER], body: &[u8]) -> u64 {
        let mut crc = started(header);
        crc.update(body);
        finished(crc, header)
    }

    /// Bytes that are not all alike, so a lane mix-up would show.
    fn input(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 131 + 7) as u8).collect()
    }

    /// The checksum of a whole file (header, then body) of at least [`HEADER`] bytes.
    fn sum(file: &[u8]) -> u64 {
        checksum(file[..HEADER].try_into().unwrap(), &file[HEADER..])
    }

    #[test]
    fn every_single_bit_flip_changes_the_sum() {
        let lens: &[usize] = if cfg!(miri) {
            &[20, 29, 90]
        } else {
            &[20, 21, 27, 28, 83, 84, 85, 220]
        };
        for &len in lens {
            let bytes = input(len);
            let before = sum(&bytes);
            for bit in 0..len * 8 {
                let mut flipped = bytes.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(sum(&flipped), before, "length {len}, bit {bit}");
            }
        }
    }

    #[test]
    fn the_sum_is_the_crc_of_magic_version_body_and_then_length() {
        for len in [HEADER, HEADER + 1, HEADER + 300] {
            let file = input(len);
            let string = [&file[..LEADING], &file[HEADER..], &file[LEADING..HEADER]].concat();
            assert_eq!(sum(&file), crc_fast::checksum(CRC, &string), "length {len}");
        }
    }

    #[test]
    fn every_change_within_64_consecutive_bits_is_caught() {
        let magic = b"FREYRTST";
        let mut w = Writer::new(magic, 0);
        w.bytes(&input(100));
        let file = w.finish();
        assert!(open(&file, magic).is_ok());
        // Every window of 8 bytes, set to values unlike the old ones in one bit, in every bit,
        // or in a pattern: the checksum differs, or (a changed body length) the framing fails.
        for at in 0..=file.len() - 8 {
            for change in [1u64, u64::MAX, 0x8000_0000_0000_0001, 0x0123_4567_89AB_CDEF] {
                let mut changed = file.clone();
                let old = u64::from_le_bytes(changed[at..at + 8].try_into().unwrap());
                changed[at..at + 8].copy_from_slice(&(old ^ change).to_le_bytes());
                assert!(
                    open(&changed, magic).is_err(),
                    "bytes {at}.., change {change:#x}"
                );
                if (at + 8 <= LEADING || at >= HEADER) && at + 8 <= file.len() - 8 {
                    assert_ne!(
                        sum(&changed),
                        sum(&file),
                        "bytes {at}.., change {change:#x}"
                    );
                }
            }
        }
        // The header's body length is part of the sum: a zero tail is not the same as no tail.
        let header = |len: u64| {
            let mut h = [0u8; HEADER];
            h[12..].copy_from_slice(&len.to_le_bytes());
            h
        };
        assert_ne!(
            checksum(&header(8), &[0; 8]),
            checksum(&header(16), &[0; 16])
        );
    }

    #[test]
    fn a_writer_that_absorbs_as_it_goes_sums_like_one_pass() {
        let magic = b"FREYRTST";
        let pieces: [&[usize]; 4] = [
            &[0],
            &[1, 63, 64, 65],
            &[7, 200, 3, 128, 1000, 5],
            &[PIECE - 9, 0, 7, 3 * PIECE + 5, 40],
        ];
        for pieces in pieces {
            let mut streamed = Writer::new(magic, 0);
            let mut whole = Writer::new(magic, 0);
            for (i, &n) in pieces.iter().enumerate() {
                let piece = input(n + i);
                let before = streamed.hashed;
                streamed.bytes(&piece);
                streamed.absorb();
                // Fed at once when PIECE bytes are waiting, else left for later.
                let waiting = streamed.out.len() - before;
                let fed = if waiting >= PIECE {
                    streamed.out.len()
                } else {
                    before
                };
                assert_eq!(streamed.hashed, fed, "pieces {pieces:?}, piece {i}");
                whole.bytes(&piece);
            }
            let (streamed, whole) = (streamed.finish(), whole.finish());
            assert_eq!(streamed, whole, "pieces {pieces:?}");
            assert!(open(&streamed, magic).is_ok(), "pieces {pieces:?}");
        }
    }

    #[test]
    fn a_verifier_fed_pieces_in_order_checks_like_one_pass() {
        let magic = b"FREYRTST";
        let mut w = Writer::new(magic, 0);
        w.bytes(&input(3 * PIECE + 1000));
        let mut file = w.finish();
        let framed = frame(&file, magic).unwrap();
        let body = framed.body;
        // Pieces with gaps, earlier ones, one from elsewhere: the sum is the same. Each entry:
        // the piece, then how far the body is fed after it.
        let mut v = framed.verifier();
        let steps = [
            ((3, 70), 0),
            ((70, PIECE + 100), PIECE + 100),
            ((PIECE + 50, PIECE + 60), PIECE + 100),
            ((2 * PIECE, 2 * PIECE + 10), PIECE + 100),
            ((2 * PIECE + 200, 3 * PIECE), 3 * PIECE),
            ((3 * PIECE + 500, body.len()), 3 * PIECE),
        ];
        for ((start, end), fed) in steps {
            v.read(&body[start..end]);
            assert_eq!(v.hashed, fed, "piece {start}..{end}");
        }
        v.read(&input(64));
        assert!(v.finish(&framed).is_ok());
        // One flipped bit anywhere in the body is a mismatch, fed or not.
        for at in [0, 64, 500, body.len() - 1] {
            file[HEADER + at] ^= 1;
            let framed = frame(&file, magic).unwrap();
            let mut v = framed.verifier();
            v.read(&framed.body[..framed.body.len() / 2]);
            assert!(v.finish(&framed).is_err(), "byte {at}");
            file[HEADER + at] ^= 1;
        }
    }
}
