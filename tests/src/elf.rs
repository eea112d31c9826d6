//! Section and symbol sizes of a little-endian ELF32 or ELF64 file: what the firmware tests
//! measure (flash = `.text` + `.rodata` + `.data`'s initial values, RAM = `.bss` + `.data`)
//! without depending on a target's binutils.

/// One section header: its name, size, file offset and `sh_link`.
pub struct Section {
    pub name: String,
    pub size: u64,
    pub offset: u64,
    pub link: u32,
}

struct Reader<'a> {
    elf: &'a [u8],
    wide: bool,
}

impl Reader<'_> {
    fn u16(&self, o: usize) -> u16 {
        u16::from_le_bytes(self.elf[o..o + 2].try_into().unwrap())
    }
    fn u32(&self, o: usize) -> u32 {
        u32::from_le_bytes(self.elf[o..o + 4].try_into().unwrap())
    }
    /// A word: 8 bytes in ELF64, 4 in ELF32.
    fn word(&self, o: usize) -> u64 {
        if self.wide {
            u64::from_le_bytes(self.elf[o..o + 8].try_into().unwrap())
        } else {
            u64::from(self.u32(o))
        }
    }
    fn cstr(&self, o: usize) -> String {
        let s = &self.elf[o..];
        let end = s.iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&s[..end]).into_owned()
    }
}

fn reader(elf: &[u8]) -> Reader<'_> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[5], 1, "not a little-endian ELF file");
    Reader {
        elf,
        wide: elf[4] == 2,
    }
}

/// Every section header.
pub fn sections(elf: &[u8]) -> Vec<Section> {
    let r = reader(elf);
    // e_shoff, e_shentsize, e_shnum, e_shstrndx.
    let (shoff, at) = if r.wide { (0x28, 0x3A) } else { (0x20, 0x2E) };
    let shoff = r.word(shoff) as usize;
    let (entsize, num, strndx) = (r.u16(at) as usize, r.u16(at + 2) as usize, r.u16(at + 4));
    let header = |i: usize| shoff + i * entsize;
    // sh_name, sh_offset, sh_size, sh_link within a header.
    let (off, size, link) = if r.wide {
        (0x18, 0x20, 0x28)
    } else {
        (0x10, 0x14, 0x18)
    };
    let names = r.word(header(strndx as usize) + off) as usize;
    (0..num)
        .map(|i| {
            let h = header(i);
            Section {
                name: r.cstr(names + r.u32(h) as usize),
                size: r.word(h + size),
                offset: r.word(h + off),
                link: r.u32(h + link),
            }
        })
        .collect()
}

/// Size of the section `name` (0 when there is none).
pub fn section_size(elf: &[u8], name: &str) -> u64 {
    sections(elf)
        .into_iter()
        .find(|s| s.name == name)
        .map_or(0, |s| s.size)
}

/// The raw bytes of the string table `.strtab` (symbol names).
pub fn strtab(elf: &[u8]) -> &[u8] {
    let s = sections(elf)
        .into_iter()
        .find(|s| s.name == ".strtab")
        .expect("a symbol table (the binary is not stripped)");
    &elf[s.offset as usize..(s.offset + s.size) as usize]
}

/// `(name, size)` of every symbol in `.symtab`.
pub fn symbols(elf: &[u8]) -> Vec<(String, u64)> {
    let r = reader(elf);
    let secs = sections(elf);
    let Some(symtab) = secs.iter().find(|s| s.name == ".symtab") else {
        return Vec::new();
    };
    let names = secs[symtab.link as usize].offset as usize;
    // st_name, st_size and the entry size.
    let (size_at, entsize) = if r.wide { (0x10, 24) } else { (0x08, 16) };
    (0..symtab.size as usize / entsize)
        .map(|i| {
            let e = symtab.offset as usize + i * entsize;
            (r.cstr(names + r.u32(e) as usize), r.word(e + size_at))
        })
        .collect()
}
