//! The top-k heap exactly as fastText's C++ builds it (libstdc++'s `push_heap`, `pop_heap` and
//! `sort_heap` with "greater score first"), so labels of equal score come out in fastText's order.

/// A (log-probability, label) pair; the heap's front is the lowest score kept.
pub(super) type Scored = (f32, usize);

fn before(a: &Scored, b: &Scored) -> bool {
    a.0 > b.0
}

/// libstdc++'s `__push_heap`: moves `value` up from `hole` towards `top`.
fn push_up(heap: &mut [Scored], mut hole: usize, top: usize, value: Scored) {
    while hole > top {
        let parent = (hole - 1) / 2;
        if !before(&heap[parent], &value) {
            break;
        }
        heap[hole] = heap[parent];
        hole = parent;
    }
    heap[hole] = value;
}

/// libstdc++'s `__adjust_heap`: sinks the hole at `hole` to a leaf, then places `value`.
fn adjust(heap: &mut [Scored], mut hole: usize, len: usize, value: Scored) {
    let top = hole;
    let mut child = hole;
    while len > 2 && child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if before(&heap[child], &heap[child - 1]) {
            child -= 1;
        }
        heap[hole] = heap[child];
        hole = child;
    }
    if len % 2 == 0 && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        heap[hole] = heap[child - 1];
        hole = child - 1;
    }
    push_up(heap, hole, top, value);
}

/// `pop_heap` over `heap[..len]`: the front moves to `len - 1`.
fn pop(heap: &mut [Scored], len: usize) {
    if len > 1 {
        let value = heap[len - 1];
        heap[len - 1] = heap[0];
        adjust(heap, 0, len - 1, value);
    }
}

/// The k best pairs, as fastText keeps them while scores arrive.
pub(super) struct TopK {
    k: usize,
    heap: Vec<Scored>,
}

impl TopK {
    pub(super) fn new(k: usize) -> Self {
        Self { k, heap: Vec::with_capacity(k.min(4096) + 1) }
    }

    /// Whether a score would be dropped at once (the heap is full of better ones).
    pub(super) fn full_above(&self, score: f32) -> bool {
        self.heap.len() == self.k && score < self.heap[0].0
    }

    pub(super) fn push(&mut self, item: Scored) {
        self.heap.push(item);
        let last = self.heap.len() - 1;
        push_up(&mut self.heap, last, 0, item);
        if self.heap.len() > self.k {
            let len = self.heap.len();
            pop(&mut self.heap, len);
            self.heap.pop();
        }
    }

    /// `sort_heap`: best first.
    pub(super) fn into_sorted(mut self) -> Vec<Scored> {
        let mut len = self.heap.len();
        while len > 1 {
            pop(&mut self.heap, len);
            len -= 1;
        }
        self.heap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_k_best_sorted_best_first() {
        let mut top = TopK::new(3);
        for (i, s) in [0.1f32, 0.5, 0.3, 0.9, 0.2, 0.7].into_iter().enumerate() {
            if !top.full_above(s) {
                top.push((s, i));
            }
        }
        assert_eq!(top.into_sorted(), vec![(0.9, 3), (0.7, 5), (0.5, 1)]);
        let mut all = TopK::new(10);
        (0..7).for_each(|i| all.push(((i % 3) as f32, i)));
        let scores: Vec<f32> = all.into_sorted().iter().map(|p| p.0).collect();
        assert_eq!(scores, vec![2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
    }
}
