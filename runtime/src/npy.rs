//! Reads the `.npy` files of the fixture contract (numpy format 1.0-3.0,
//! little-endian, C order), which is all the exporter writes.

use std::path::Path;

use crate::tensor::{Data, Tensor, bf16, f16};

pub fn read(path: &Path) -> Result<Tensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(bytes: &[u8]) -> Result<Tensor, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (bad magic)".into());
    }
    let (header_len, header_start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let header = bytes
        .get(header_start..header_start + header_len)
        .ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not UTF-8")?;
    let descr = dict_value(header, "descr").ok_or("header has no descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    if dict_value(header, "fortran_order").map(str::trim) != Some("False") {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    let shape = parse_shape(header)?;
    let count: usize = shape.iter().product();
    let body = &bytes[header_start + header_len..];
    let data = match descr {
        "<f4" => Data::Float32(le_chunks(body, count, f32::from_le_bytes)?),
        "<i8" => Data::Int64(le_chunks(body, count, i64::from_le_bytes)?),
        "<f2" => Data::Float16(le_chunks(body, count, |b| {
            f16::from_bits(u16::from_le_bytes(b))
        })?),
        // numpy has no bfloat16: the exporter writes its bit patterns as uint16.
        "<u2" => Data::Bfloat16(le_chunks(body, count, |b| {
            bf16::from_bits(u16::from_le_bytes(b))
        })?),
        "<i4" => Data::Int32(le_chunks(body, count, i32::from_le_bytes)?),
        "|i1" => Data::Int8(
            body.get(..count)
                .ok_or("truncated data")?
                .iter()
                .map(|&b| b as i8)
                .collect(),
        ),
        "|u1" => Data::Uint8(body.get(..count).ok_or("truncated data")?.to_vec()),
        "|b1" => Data::Bool(
            body.get(..count)
                .ok_or("truncated data")?
                .iter()
                .map(|b| *b != 0)
                .collect(),
        ),
        other => {
            return Err(format!(
                "unsupported dtype {other:?} (float32 <f4, float16 <f2, bfloat16 as <u2 bits, int64, int32, int8, uint8 and bool are)"
            ));
        }
    };
    Ok(Tensor { shape, data })
}

fn le_chunks<T, const N: usize>(
    body: &[u8],
    count: usize,
    from: fn([u8; N]) -> T,
) -> Result<Vec<T>, String> {
    let body = body.get(..count * N).ok_or("truncated data")?;
    Ok(body
        .chunks_exact(N)
        .map(|c| from(c.try_into().expect("chunk of N bytes")))
        .collect())
}

/// The raw text after `'key':` up to the next top-level comma of the header dict.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let start = header.find(&format!("'{key}':"))? + key.len() + 3;
    let rest = &header[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn parse_shape(header: &str) -> Result<Vec<usize>, String> {
    let start = header.find("'shape':").ok_or("header has no shape")?;
    let rest = &header[start..];
    let open = rest.find('(').ok_or("bad shape")?;
    let close = rest.find(')').ok_or("bad shape")?;
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad shape entry {s:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn reads_float_matrix() {
        let body: Vec<u8> = [1.0f32, 2.0, 3.0, -4.5, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let t = parse(&npy("<f4", "(2, 3)", &body)).unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.data, Data::Float32(vec![1.0, 2.0, 3.0, -4.5, 5.0, 6.0]));
    }

    #[test]
    fn reads_half_precision_and_byte_types() {
        let halves = [1.5f32, -2.0];
        let body: Vec<u8> = halves
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_bits().to_le_bytes())
            .collect();
        assert_eq!(
            parse(&npy("<f2", "(2,)", &body)).unwrap().data,
            Data::Float16(halves.map(f16::from_f32).to_vec())
        );
        let body: Vec<u8> = halves
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_bits().to_le_bytes())
            .collect();
        assert_eq!(
            parse(&npy("<u2", "(2,)", &body)).unwrap().data,
            Data::Bfloat16(halves.map(bf16::from_f32).to_vec())
        );
        assert_eq!(
            parse(&npy("|i1", "(2,)", &[0xff, 0x02])).unwrap().data,
            Data::Int8(vec![-1, 2])
        );
        assert_eq!(
            parse(&npy("|u1", "(2,)", &[0xff, 0x02])).unwrap().data,
            Data::Uint8(vec![255, 2])
        );
    }

    #[test]
    fn reads_int64_vector_and_scalar_shape() {
        let body: Vec<u8> = [7i64, -1].iter().flat_map(|x| x.to_le_bytes()).collect();
        let t = parse(&npy("<i8", "(2,)", &body)).unwrap();
        assert_eq!(t.shape, vec![2]);
        assert_eq!(t.data, Data::Int64(vec![7, -1]));
        let scalar = parse(&npy("<i8", "()", &7i64.to_le_bytes())).unwrap();
        assert_eq!(scalar.shape, Vec::<usize>::new());
    }

    #[test]
    fn rejects_truncated_and_unknown() {
        assert!(
            parse(&npy("<f4", "(4,)", &[0; 8]))
                .unwrap_err()
                .contains("truncated")
        );
        assert!(
            parse(&npy("<c8", "(1,)", &[0; 8]))
                .unwrap_err()
                .contains("unsupported dtype")
        );
        assert!(parse(b"not numpy at all").is_err());
    }
}
