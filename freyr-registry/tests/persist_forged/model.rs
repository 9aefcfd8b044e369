//! The bodies of an export and of a save as plain data, read from a real file and written back
//! (with every count stored apart from the list it counts, so a test can make them disagree),
//! and the framing with a correct checksum: a forged file passes every byte-level check and
//! reaches the semantic ones. Written from the format's description in `persist/format.rs` and
//! the module docs, independently of the crate's own writer.

/// A file's magic, format version and body.
pub(crate) struct Framed {
    pub magic: [u8; 8],
    pub version: u32,
    pub body: Vec<u8>,
}

/// Splits a file written by the crate (its checksum is not checked here).
pub(crate) fn unframe(file: &[u8]) -> Framed {
    Framed {
        magic: file[..8].try_into().unwrap(),
        version: u32::from_le_bytes(file[8..12].try_into().unwrap()),
        body: file[20..file.len() - 8].to_vec(),
    }
}

/// Header, body and a correct checksum: CRC-64/NVME of the magic and version, the body, then
/// the body length.
pub(crate) fn frame(framed: &Framed) -> Vec<u8> {
    let len = (framed.body.len() as u64).to_le_bytes();
    let mut summed = Vec::with_capacity(framed.body.len() + 20);
    summed.extend_from_slice(&framed.magic);
    summed.extend_from_slice(&framed.version.to_le_bytes());
    summed.extend_from_slice(&framed.body);
    summed.extend_from_slice(&len);
    let sum = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Nvme, &summed);
    let mut file = Vec::with_capacity(framed.body.len() + 28);
    file.extend_from_slice(&framed.magic);
    file.extend_from_slice(&framed.version.to_le_bytes());
    file.extend_from_slice(&len);
    file.extend_from_slice(&framed.body);
    file.extend_from_slice(&sum.to_le_bytes());
    file
}

/// Reads a body written by the crate (trusted: any mismatch is a bug of this model).
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Vec<u8> {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.to_vec()
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.u64() as usize;
        self.take(n)
    }
    fn u32s(&mut self) -> Vec<u32> {
        let n = self.u64() as usize;
        (0..n).map(|_| self.u32()).collect()
    }
    fn u64s(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.u64()).collect()
    }
}

/// Appends a body.
#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    /// `count`, then the words (`count` may disagree with them).
    fn u32s(&mut self, count: u64, vs: &[u32]) {
        self.u64(count);
        vs.iter().for_each(|&v| self.u32(v));
    }
}

/// One entry of a file's type table.
#[derive(Clone, Debug)]
pub(crate) struct Type {
    pub name: Vec<u8>,
    pub version: u32,
    pub encoding: u32,
    pub size: u64,
    pub align: u64,
}

/// The type table: the stored count, then the entries.
#[derive(Clone, Debug)]
pub(crate) struct Types {
    pub count: u32,
    pub list: Vec<Type>,
}

impl Types {
    fn read(c: &mut Cursor<'_>) -> Types {
        let count = c.u32();
        let list = (0..count)
            .map(|_| Type {
                name: c.bytes(),
                version: c.u32(),
                encoding: c.u32(),
                size: c.u64(),
                align: c.u64(),
            })
            .collect();
        Types { count, list }
    }

    fn write(&self, o: &mut Out) {
        o.u32(self.count);
        for t in &self.list {
            o.bytes(&t.name);
            o.u32(t.version);
            o.u32(t.encoding);
            o.u64(t.size);
            o.u64(t.align);
        }
    }
}

/// A list whose stored length may disagree with it.
#[derive(Clone, Debug)]
pub(crate) struct Counted<T> {
    pub count: u64,
    pub items: Vec<T>,
}

impl<T> Counted<T> {
    fn new(items: Vec<T>) -> Counted<T> {
        Counted {
            count: items.len() as u64,
            items,
        }
    }
}

/// One group of an export: its types (indices into the type table), old entity ids and one
/// column blob per type.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub set: Counted<u32>,
    pub members: Counted<u64>,
    pub blobs: Vec<Vec<u8>>,
}

/// An export's body.
#[derive(Clone, Debug)]
pub(crate) struct Export {
    pub types: Types,
    pub groups: Counted<Group>,
}

impl Export {
    pub(crate) fn read(body: &[u8]) -> Export {
        let mut c = Cursor(body);
        let types = Types::read(&mut c);
        let n = c.u64() as usize;
        let groups = (0..n)
            .map(|_| {
                let set = c.u32s();
                let m = c.u64() as usize;
                let members = c.u64s(m);
                let blobs = set.iter().map(|_| c.bytes()).collect();
                Group {
                    set: Counted::new(set),
                    members: Counted::new(members),
                    blobs,
                }
            })
            .collect();
        assert!(c.0.is_empty(), "the model reads a whole export");
        Export {
            types,
            groups: Counted::new(groups),
        }
    }

    pub(crate) fn write(&self) -> Vec<u8> {
        let mut o = Out::default();
        self.types.write(&mut o);
        o.u64(self.groups.count);
        for g in &self.groups.items {
            o.u32s(g.set.count, &g.set.items);
            o.u64(g.members.count);
            g.members.items.iter().for_each(|&e| o.u64(e));
            g.blobs.iter().for_each(|b| o.bytes(b));
        }
        o.0
    }
}

/// One archetype of a save.
#[derive(Clone, Debug)]
pub(crate) struct Archetype {
    pub ids: Counted<u32>,
    pub slabs: Vec<u32>,
    pub chunk_ids: Vec<u32>,
    pub entities: Counted<u64>,
    pub blobs: Vec<Vec<u8>>,
}

/// A save's body.
#[derive(Clone, Debug)]
pub(crate) struct Save {
    pub tick: u64,
    pub types: Types,
    pub slots: Vec<u32>,
    pub free: Vec<u32>,
    pub len: u64,
    pub chunk_ids: u64,
    pub free_chunks: Vec<u32>,
    pub archetypes: Counted<Archetype>,
    /// The change stamps section: per archetype, its changed and added ticks.
    pub stamps: Counted<(Vec<u64>, Vec<u64>)>,
}

impl Save {
    pub(crate) fn read(body: &[u8]) -> Save {
        let mut c = Cursor(body);
        let tick = c.u64();
        let types = Types::read(&mut c);
        let (slots, free, len, chunk_ids, free_chunks) =
            (c.u32s(), c.u32s(), c.u64(), c.u64(), c.u32s());
        let n = c.u64() as usize;
        let archetypes = (0..n)
            .map(|_| {
                let ids = c.u32s();
                let (slabs, chunk_ids) = (c.u32s(), c.u32s());
                let rows = c.u64() as usize;
                let entities = c.u64s(rows);
                let blobs = ids.iter().map(|_| c.bytes()).collect();
                Archetype {
                    ids: Counted::new(ids),
                    slabs,
                    chunk_ids,
                    entities: Counted::new(entities),
                    blobs,
                }
            })
            .collect();
        let n = c.u64() as usize;
        let stamps = (0..n)
            .map(|_| {
                let changed = c.u64() as usize;
                let changed = c.u64s(changed);
                let added = c.u64() as usize;
                (changed, c.u64s(added))
            })
            .collect();
        assert!(c.0.is_empty(), "the model reads a whole save");
        Save {
            tick,
            types,
            slots,
            free,
            len,
            chunk_ids,
            free_chunks,
            archetypes: Counted::new(archetypes),
            stamps: Counted::new(stamps),
        }
    }

    pub(crate) fn write(&self) -> Vec<u8> {
        let mut o = Out::default();
        o.u64(self.tick);
        self.types.write(&mut o);
        o.u32s(self.slots.len() as u64, &self.slots);
        o.u32s(self.free.len() as u64, &self.free);
        o.u64(self.len);
        o.u64(self.chunk_ids);
        o.u32s(self.free_chunks.len() as u64, &self.free_chunks);
        o.u64(self.archetypes.count);
        for a in &self.archetypes.items {
            o.u32s(a.ids.count, &a.ids.items);
            o.u32s(a.slabs.len() as u64, &a.slabs);
            o.u32s(a.chunk_ids.len() as u64, &a.chunk_ids);
            o.u64(a.entities.count);
            a.entities.items.iter().for_each(|&e| o.u64(e));
            a.blobs.iter().for_each(|b| o.bytes(b));
        }
        o.u64(self.stamps.count);
        for (changed, added) in &self.stamps.items {
            o.u64(changed.len() as u64);
            changed.iter().for_each(|&t| o.u64(t));
            o.u64(added.len() as u64);
            added.iter().for_each(|&t| o.u64(t));
        }
        o.0
    }
}
