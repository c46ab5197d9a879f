//! Binary aggregates: unions of serialized Roaring bitmaps and DataSketches sketches, each in
//! the serialized form Java Paimon reads and writes.

use datasketches::hll::{HllSketch, HllType, HllUnion};
use datasketches::theta::{CompactThetaSketch, ThetaUnionBuilder};

use crate::error::{Error, Result};

fn bad(field: &str, f: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!(
        "aggregate function '{f}' of field '{field}': not a serialized {what}: {e}"
    ))
}

/// Union of two serialized 32-bit Roaring bitmaps (portable format, as Java's RoaringBitmap
/// writes).
pub fn rbm32_union(field: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let de = |x: &[u8]| {
        roaring::RoaringBitmap::deserialize_from(x)
            .map_err(|e| bad(field, "rbm32", "Roaring bitmap", e))
    };
    let mut u = de(a)?;
    u |= de(b)?;
    let mut out = Vec::with_capacity(u.serialized_size());
    u.serialize_into(&mut out)
        .map_err(|e| Error::Internal(format!("rbm32 serialization: {e}")))?;
    Ok(out)
}

/// Java's `ThetaSketch.union`: a default union (lg_k 12, default seed) of both sketches, its
/// ordered compact result serialized uncompressed.
pub fn theta_union(field: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let de = |x: &[u8]| {
        CompactThetaSketch::deserialize(x)
            .map_err(|e| bad(field, "theta_sketch", "theta sketch", e))
    };
    let (sa, sb) = (de(a)?, de(b)?);
    let mut u = ThetaUnionBuilder::default()
        .build()
        .map_err(|e| Error::Internal(format!("theta union: {e}")))?;
    for s in [&sa, &sb] {
        u.update(s.as_view())
            .map_err(|e| bad(field, "theta_sketch", "theta sketch", e))?;
    }
    Ok(u.to_sketch(true).serialize())
}

/// Java's `HllSketchUtil.union`: a union heapified from the second sketch (so lg_max_k is its
/// lg_config_k), updated with the first, its result as an HLL_4 compact sketch.
pub fn hll_union(field: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let de =
        |x: &[u8]| HllSketch::deserialize(x).map_err(|e| bad(field, "hll_sketch", "HLL sketch", e));
    let (sa, sb) = (de(a)?, de(b)?);
    let mut u =
        HllUnion::new(sb.lg_config_k()).map_err(|e| bad(field, "hll_sketch", "HLL sketch", e))?;
    u.update(&sb);
    u.update(&sa);
    Ok(u.to_sketch(HllType::Hll4).serialize())
}
