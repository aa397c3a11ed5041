//! From the hidden vector to label scores, per training loss, in fastText's float arithmetic:
//! softmax, one-vs-all (and negative sampling) through fastText's sigmoid table, and the
//! hierarchical softmax tree walked depth first. Scores are `log(p + 1e-5)`, as fastText ranks.

use super::file::Loss;
use super::heap::{Scored, TopK};
use super::matrix::Matrix;
use super::ModelError;

const SIGMOID_TABLE_SIZE: usize = 512;
const MAX_SIGMOID: f32 = 8.0;

/// fastText's `std_log`: the argument is a float, the logarithm is taken in double.
fn std_log(x: f32) -> f32 {
    ((x as f64) + 1e-5).ln() as f32
}

pub(super) enum Output {
    /// Softmax over all labels.
    Softmax,
    /// An independent sigmoid per label (one-vs-all, negative sampling), looked up in a table.
    Sigmoid(Vec<f32>),
    /// A Huffman tree over the labels.
    Tree(Vec<Node>),
}

#[derive(Clone, Copy)]
pub(super) struct Node {
    parent: i32,
    left: i32,
    right: i32,
    count: i64,
}

impl Output {
    pub(super) fn new(loss: Loss, label_counts: &[i64]) -> Result<Self, ModelError> {
        Ok(match loss {
            Loss::Softmax => Output::Softmax,
            Loss::OneVsAll | Loss::NegativeSampling => Output::Sigmoid(sigmoid_table()),
            Loss::HierarchicalSoftmax => Output::Tree(huffman(label_counts)?),
        })
    }

    /// The output rows the loss reads.
    pub(super) fn rows_needed(&self, labels: usize) -> usize {
        match self {
            Output::Tree(_) => labels - 1,
            _ => labels,
        }
    }

    /// The `k` best labels as (log score, label), best first.
    pub(super) fn predict(&self, wo: &Matrix, hidden: &[f32], labels: usize, k: usize) -> Vec<Scored> {
        let mut top = TopK::new(k);
        match self {
            Output::Tree(tree) => walk(tree, wo, hidden, labels, &mut top),
            _ => {
                for (i, p) in self.probabilities(wo, hidden, labels).into_iter().enumerate() {
                    // fastText's threshold is 0: every label qualifies, and the heap keeps the best.
                    let s = std_log(p);
                    if !top.full_above(s) {
                        top.push((s, i));
                    }
                }
            }
        }
        top.into_sorted()
    }

    /// Every label's probability under softmax or sigmoids (not the tree, which is walked).
    fn probabilities(&self, wo: &Matrix, hidden: &[f32], labels: usize) -> Vec<f32> {
        let mut p: Vec<f32> = (0..labels).map(|i| wo.dot_row(hidden, i)).collect();
        match self {
            Output::Sigmoid(table) => p.iter_mut().for_each(|x| *x = sigmoid(table, *x)),
            _ => softmax(&mut p),
        }
        p
    }

    /// The log score fastText's `predict` with every label (`k = -1`) reports for `label`, or
    /// None when it leaves the label out: under hierarchical softmax, a path that falls below
    /// `log(1e-5)` on the way down. Every label qualifies under softmax and sigmoids.
    pub(super) fn score_of(&self, wo: &Matrix, hidden: &[f32], labels: usize, label: usize) -> Option<f32> {
        let tree = match self {
            Output::Tree(tree) => tree,
            Output::Sigmoid(table) => return Some(std_log(sigmoid(table, wo.dot_row(hidden, label)))),
            Output::Softmax => return Some(std_log(self.probabilities(wo, hidden, labels)[label])),
        };
        // The path from the root: fastText's walk adds the same terms in the same order.
        let mut path = vec![label];
        while let Ok(parent) = usize::try_from(tree[path[path.len() - 1]].parent) {
            path.push(parent);
        }
        let floor = std_log(0.0);
        let mut score = 0.0f32;
        for pair in path.windows(2).rev() {
            let (child, node) = (pair[0], pair[1]);
            if score < floor {
                return None;
            }
            let f = sigmoid_exact(wo.dot_row(hidden, node - labels));
            score += if tree[node].left as usize == child { std_log((1.0 - f as f64) as f32) } else { std_log(f) };
        }
        (score >= floor).then_some(score)
    }
}

/// `1 / (1 + e^-x)` as fastText's tree walk computes it (float exponent, double division).
fn sigmoid_exact(x: f32) -> f32 {
    (1.0 / (1.0 + (-x).exp()) as f64) as f32
}

/// fastText's softmax: its unqualified `exp` is C's double `exp`, rounded back to float.
fn softmax(x: &mut [f32]) {
    let max = x.iter().fold(x[0], |m, &v| m.max(v));
    let mut z = 0.0f32;
    for v in x.iter_mut() {
        *v = ((*v - max) as f64).exp() as f32;
        z += *v;
    }
    x.iter_mut().for_each(|v| *v /= z);
}

fn sigmoid_table() -> Vec<f32> {
    (0..=SIGMOID_TABLE_SIZE)
        .map(|i| {
            let x = (i * 2 * MAX_SIGMOID as usize) as f32 / SIGMOID_TABLE_SIZE as f32 - MAX_SIGMOID;
            (1.0 / (1.0 + (-x).exp() as f64)) as f32
        })
        .collect()
}

fn sigmoid(table: &[f32], x: f32) -> f32 {
    if x < -MAX_SIGMOID {
        0.0
    } else if x > MAX_SIGMOID {
        1.0
    } else {
        table[((x + MAX_SIGMOID) * SIGMOID_TABLE_SIZE as f32 / MAX_SIGMOID / 2.0) as usize]
    }
}

/// fastText's `buildTree`: leaves are the labels (sorted by count, descending, as the file
/// stores them), inner nodes follow; node `2n - 2` is the root. Counts that do not make a tree
/// (only a corrupt file has them) are an error, so the walk always ends at a label.
fn huffman(counts: &[i64]) -> Result<Vec<Node>, ModelError> {
    let n = counts.len();
    let mut tree = vec![Node { parent: -1, left: -1, right: -1, count: 1_000_000_000_000_000 }; 2 * n - 1];
    for (node, &c) in tree.iter_mut().zip(counts) {
        node.count = c;
    }
    let (mut leaf, mut inner) = (n as i64 - 1, n);
    for i in n..2 * n - 1 {
        let mut pick = [0usize; 2];
        for p in &mut pick {
            if leaf >= 0 && tree[leaf as usize].count < tree[inner].count {
                *p = leaf as usize;
                leaf -= 1;
            } else {
                *p = inner;
                inner += 1;
            }
        }
        if pick.iter().any(|&p| p >= i) {
            return Err(ModelError("the label counts do not make fastText's label tree: the file is corrupt".into()));
        }
        tree[i] = Node { parent: -1, left: pick[0] as i32, right: pick[1] as i32, count: tree[pick[0]].count.saturating_add(tree[pick[1]].count) };
        tree[pick[0]].parent = i as i32;
        tree[pick[1]].parent = i as i32;
    }
    Ok(tree)
}

/// fastText's `HierarchicalSoftmaxLoss::dfs`, with an explicit stack in the same visiting order
/// (left child first), pruning below `log(1e-5)` and below the heap's worst.
fn walk(tree: &[Node], wo: &Matrix, hidden: &[f32], labels: usize, top: &mut TopK) {
    let floor = std_log(0.0);
    let mut stack = vec![(2 * labels - 2, 0.0f32)];
    while let Some((node, score)) = stack.pop() {
        if score < floor || top.full_above(score) {
            continue;
        }
        let Node { left, right, .. } = tree[node];
        if left == -1 && right == -1 {
            top.push((score, node));
            continue;
        }
        let f = sigmoid_exact(wo.dot_row(hidden, node - labels));
        stack.push((right as usize, score + std_log(f)));
        stack.push((left as usize, score + std_log((1.0 - f as f64) as f32)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_tree_of_three_labels_joins_the_rarest_first() {
        let tree = huffman(&[5, 3, 1]).unwrap();
        // Node 3 joins leaves 2 (count 1) and 1 (count 3); the root joins node 3 (count 4, less
        // than leaf 0's 5, so it comes first) and leaf 0.
        assert_eq!((tree[3].left, tree[3].right, tree[3].count), (2, 1, 4));
        assert_eq!((tree[4].left, tree[4].right, tree[4].count), (3, 0, 9));
        assert_eq!((tree[2].parent, tree[1].parent, tree[3].parent, tree[0].parent, tree[4].parent), (3, 3, 4, 4, -1));
        assert!(huffman(&[2_000_000_000_000_000, 1]).is_err());
    }

    #[test]
    fn sigmoid_table_matches_the_function_at_its_knots() {
        let t = sigmoid_table();
        assert_eq!(sigmoid(&t, -9.0), 0.0);
        assert_eq!(sigmoid(&t, 9.0), 1.0);
        assert!((sigmoid(&t, 0.0) - 0.5).abs() < 1e-6);
    }
}
