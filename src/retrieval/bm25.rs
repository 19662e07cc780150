//! BM25F text relevance: BM25 over several fields, each with its own weight and length
//! normalization, combined before the term-frequency saturation (Robertson and Zaragoza, "The
//! Probabilistic Relevance Framework", 2009, section 3.6).

use super::features::{DocFeatures, FIELDS};

/// Saturation: how quickly repeated occurrences of a term stop adding relevance. Lower than the
/// usual 1.2 because memories are short: whether an entry holds a word says more than how often.
pub const K1: f64 = 0.9;
/// Length normalization per field (`summary`, `content`, `subject`, `tags`); mild, as for short
/// texts. The values were chosen by the retrieval evaluations of docs/PERFORMANCE.md, where
/// both the generated set and LoCoMo gained from k1 0.9 and b 0.5 over the usual 1.2 and 0.75.
pub const B: [f64; 4] = [0.5, 0.5, 0.5, 0.5];
/// Field weights: a word in the summary, subject or tags says more about what an entry is than
/// a word in its content.
pub const WEIGHTS: [f64; 4] = [2.5, 1.0, 2.0, 2.0];

const _: () = assert!(FIELDS.len() == WEIGHTS.len());

/// Inverse document frequency (the non-negative BM25 variant): `ln(1 + (N - df + 0.5) / (df + 0.5))`.
pub fn idf(docs: f64, df: f64) -> f64 {
    (1.0 + (docs - df + 0.5) / (df + 0.5)).ln()
}

/// The weighted, length-normalized frequency of one term in one entry.
pub fn field_frequency(tf: [u8; 4], f: &DocFeatures, average: [f64; 4]) -> f64 {
    let mut sum = 0.0;
    for i in 0..4 {
        if tf[i] == 0 {
            continue;
        }
        let norm = 1.0 - B[i] + B[i] * f64::from(f.lens[i]) / average[i];
        sum += WEIGHTS[i] * f64::from(tf[i]) / norm.max(1e-6);
    }
    sum
}

/// BM25F contribution of one term: `idf * saturate(tf~)`.
pub fn term_score(idf: f64, tf_weighted: f64) -> f64 {
    idf * saturate(tf_weighted)
}

/// The saturated frequency `tf~ * (k1 + 1) / (tf~ + k1)`: a term's contribution before its idf.
pub fn saturate(tf_weighted: f64) -> f64 {
    if tf_weighted <= 0.0 {
        0.0
    } else {
        tf_weighted * (K1 + 1.0) / (tf_weighted + K1)
    }
}
