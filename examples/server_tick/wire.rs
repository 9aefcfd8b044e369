//! The snapshot wire format: quantised entity state, full and delta records, despawns.
//!
//! ```text
//! packet  := 0xF5 varint(tick) record* 0x00
//! record  := 0x01 varint(index) varint(generation) kind field[7] hp   full: absolute fields
//!          | 0x02 varint(index) mask field[popcount(mask)]            delta against what the
//!                                                                     peer last received
//!          | 0x03 varint(index) varint(generation)                    despawn
//!          | 0x04 varint(index) hp                                    health, after the
//!                                                                     entity's delta, only
//!                                                                     when it changed
//! field   := zigzag varint (LEB128) of a quantised value, or of its change
//! ```
//!
//! Positions are quantised to 0.25 m, velocities to 0.1 m/s and the heading to 1/65536 turn.
//! A delta's mask says which of the seven fields changed (bit i = field i).

/// The state of an entity as a peer sees it: quantised, so a delta of zero means "unchanged".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Quantized {
    /// x, y, z position, vx, vy, vz velocity, heading.
    pub fields: [i32; 7],
}

impl Quantized {
    /// Quantises a flight state.
    #[must_use]
    pub(crate) fn of(pos: [f32; 3], vel: [f32; 3], heading: f32) -> Self {
        let q = |v: f32, step: f32| (v / step).round() as i32;
        Quantized {
            fields: [
                q(pos[0], 0.25),
                q(pos[1], 0.25),
                q(pos[2], 0.25),
                q(vel[0], 0.1),
                q(vel[1], 0.1),
                q(vel[2], 0.1),
                (heading / core::f32::consts::TAU * 65536.0).round() as i32 & 0xFFFF,
            ],
        }
    }
}

/// The packet header's first byte.
pub(crate) const PACKET: u8 = 0xF5;
/// The end-of-packet byte.
pub(crate) const END: u8 = 0x00;
/// Tag of a full record.
pub(crate) const FULL: u8 = 0x01;
/// Tag of a delta record.
pub(crate) const DELTA: u8 = 0x02;
/// Tag of a despawn record.
pub(crate) const DESPAWN: u8 = 0x03;
/// Tag of a health record.
pub(crate) const HEALTH: u8 = 0x04;

/// Appends `v` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded, then as a varint.
pub(crate) fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends a full record.
pub(crate) fn put_full(
    out: &mut Vec<u8>,
    index: u32,
    generation: u32,
    kind: u8,
    q: &Quantized,
    hp: u8,
) {
    out.push(FULL);
    put_varint(out, u64::from(index));
    put_varint(out, u64::from(generation));
    out.push(kind);
    for &f in &q.fields {
        put_signed(out, i64::from(f));
    }
    out.push(hp);
}

/// Appends a delta record of `now` against `before`.
pub(crate) fn put_delta(out: &mut Vec<u8>, index: u32, before: &Quantized, now: &Quantized) {
    out.push(DELTA);
    put_varint(out, u64::from(index));
    let mut mask = 0u8;
    for i in 0..7 {
        if now.fields[i] != before.fields[i] {
            mask |= 1 << i;
        }
    }
    out.push(mask);
    for i in 0..7 {
        if mask & (1 << i) != 0 {
            put_signed(out, i64::from(now.fields[i]) - i64::from(before.fields[i]));
        }
    }
}

/// Appends a health record: entity `index`'s new hit points.
pub(crate) fn put_health(out: &mut Vec<u8>, index: u32, hp: u8) {
    out.push(HEALTH);
    put_varint(out, u64::from(index));
    out.push(hp);
}

/// Appends a despawn record.
pub(crate) fn put_despawn(out: &mut Vec<u8>, index: u32, generation: u32) {
    out.push(DESPAWN);
    put_varint(out, u64::from(index));
    put_varint(out, u64::from(generation));
}

/// A decoded record (the client's side, used by the tests to check what a peer was told).
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// A full record.
    Full {
        index: u32,
        generation: u32,
        kind: u8,
        q: Quantized,
        hp: u8,
    },
    /// A delta record.
    Delta {
        index: u32,
        deltas: [Option<i64>; 7],
    },
    /// A despawn.
    Despawn { index: u32, generation: u32 },
    /// A health change.
    Health { index: u32, hp: u8 },
}

/// Decodes one packet into its tick and records.
///
/// # Errors
///
/// A message naming what was malformed.
#[cfg(test)]
pub(crate) fn decode(mut bytes: &[u8]) -> Result<(u64, Vec<Record>), String> {
    fn byte(b: &mut &[u8]) -> Result<u8, String> {
        let (&first, rest) = b.split_first().ok_or("truncated packet")?;
        *b = rest;
        Ok(first)
    }
    fn varint(b: &mut &[u8]) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let x = byte(b)?;
            v |= u64::from(x & 0x7F) << shift;
            if x & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    }
    fn signed(b: &mut &[u8]) -> Result<i64, String> {
        let z = varint(b)?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }
    let small = |v: u64| u32::try_from(v).map_err(|_| format!("{v} does not fit 32 bits"));
    if byte(&mut bytes)? != PACKET {
        return Err("not a snapshot packet".into());
    }
    let tick = varint(&mut bytes)?;
    let mut records = Vec::new();
    loop {
        match byte(&mut bytes)? {
            END => break,
            FULL => {
                let index = small(varint(&mut bytes)?)?;
                let generation = small(varint(&mut bytes)?)?;
                let kind = byte(&mut bytes)?;
                let mut q = Quantized::default();
                for f in &mut q.fields {
                    *f = i32::try_from(signed(&mut bytes)?).map_err(|e| e.to_string())?;
                }
                let hp = byte(&mut bytes)?;
                records.push(Record::Full {
                    index,
                    generation,
                    kind,
                    q,
                    hp,
                });
            }
            DELTA => {
                let index = small(varint(&mut bytes)?)?;
                let mask = byte(&mut bytes)?;
                let mut deltas = [None; 7];
                for (i, d) in deltas.iter_mut().enumerate() {
                    if mask & (1 << i) != 0 {
                        *d = Some(signed(&mut bytes)?);
                    }
                }
                records.push(Record::Delta { index, deltas });
            }
            DESPAWN => {
                let index = small(varint(&mut bytes)?)?;
                let generation = small(varint(&mut bytes)?)?;
                records.push(Record::Despawn { index, generation });
            }
            HEALTH => {
                let index = small(varint(&mut bytes)?)?;
                let hp = byte(&mut bytes)?;
                records.push(Record::Health { index, hp });
            }
            other => return Err(format!("unknown record tag {other:#x}")),
        }
    }
    if !bytes.is_empty() {
        return Err(format!("{} bytes after the end of the packet", bytes.len()));
    }
    Ok((tick, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_the_decoder() {
        let a = Quantized::of([100.0, 2000.5, 3000.25], [-12.3, 200.0, 0.0], 1.0);
        let mut b = a;
        b.fields[0] += 17;
        b.fields[5] -= 300;
        let mut out = vec![PACKET];
        put_varint(&mut out, 123_456);
        put_full(&mut out, 7, 2, 1, &a, 90);
        put_delta(&mut out, 7, &a, &b);
        put_health(&mut out, 7, 88);
        put_despawn(&mut out, 9, 4);
        out.push(END);
        let (tick, records) = decode(&out).unwrap();
        assert_eq!(tick, 123_456);
        let mut want = [None; 7];
        want[0] = Some(17);
        want[5] = Some(-300);
        assert_eq!(
            records,
            vec![
                Record::Full {
                    index: 7,
                    generation: 2,
                    kind: 1,
                    q: a,
                    hp: 90
                },
                Record::Delta {
                    index: 7,
                    deltas: want
                },
                Record::Health { index: 7, hp: 88 },
                Record::Despawn {
                    index: 9,
                    generation: 4
                },
            ]
        );
    }

    #[test]
    fn an_unchanged_entity_costs_three_bytes() {
        let a = Quantized::of([1.0; 3], [2.0; 3], 0.5);
        let mut out = Vec::new();
        put_delta(&mut out, 100, &a, &a);
        assert_eq!(out.len(), 3);
    }
}
