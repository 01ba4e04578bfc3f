//! The worst N of a stream: the N items with the largest key (a latency), ties to the earlier
//! arrival. One rule for every "worst samples" list, so the batch analysis, the streaming
//! analysis and the recorder agree on which samples are the worst and in which order.

/// The `n` items with the largest key seen so far, kept worst first (key descending, then
/// arrival `seq` ascending). Memory: at most `n` items; an insertion is O(n) (n is small: the
/// samples a report shows).
#[derive(Clone, Debug)]
pub struct WorstN<T> {
    n: usize,
    items: Vec<(u64, u64, T)>,
}

impl<T> WorstN<T> {
    /// Room for all `n` is allocated here: keeping an item never allocates (the recorder's
    /// measurement loop relies on it).
    pub fn new(n: usize) -> WorstN<T> {
        WorstN {
            n,
            items: Vec::with_capacity(n),
        }
    }

    /// Whether an item with this key and arrival would be kept now.
    #[inline]
    pub fn enters(&self, key: u64, seq: u64) -> bool {
        if self.items.len() < self.n {
            return true;
        }
        self.items
            .last()
            .is_some_and(|&(k, s, _)| key > k || (key == k && seq < s))
    }

    /// Keep `item` if it is among the worst `n` so far (and drop the one it displaces); true
    /// when kept.
    pub fn push(&mut self, key: u64, seq: u64, item: T) -> bool {
        if self.n == 0 || !self.enters(key, seq) {
            return false;
        }
        let pos = self
            .items
            .partition_point(|&(k, s, _)| k > key || (k == key && s < seq));
        self.items.insert(pos, (key, seq, item));
        self.items.truncate(self.n);
        true
    }

    /// The kept items, worst first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(_, _, t)| t)
    }

    /// The kept items, worst first.
    pub fn into_vec(self) -> Vec<T> {
        self.items.into_iter().map(|(_, _, t)| t).collect()
    }

    /// Nothing kept, the room for `n` kept (no allocation).
    pub fn clear(&mut self) {
        self.items.clear();
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Heap held by the list itself (not by what the items own), bytes.
    pub fn heap_bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<(u64, u64, T)>()
    }
}

#[cfg(test)]
mod tests {
    use super::WorstN;

    #[test]
    fn largest_first_ties_to_the_earlier() {
        let mut w = WorstN::new(3);
        for (seq, key) in [5u64, 9, 1, 9, 7, 9, 3].into_iter().enumerate() {
            w.push(key, seq as u64, seq);
        }
        // Keys 9 at seq 1, 3, 5; the 9 at 5 displaced 7 (seq 4) and 5 (seq 0).
        assert_eq!(w.into_vec(), vec![1, 3, 5]);
        let mut w = WorstN::new(2);
        assert!(w.push(4, 0, 'a') && w.push(4, 1, 'b'));
        assert!(!w.enters(4, 2), "a later tie does not displace");
        assert!(w.enters(4, 0) && w.enters(5, 9));
        assert!(!w.push(3, 3, 'c'));
        assert_eq!(w.iter().copied().collect::<String>(), "ab");
        let mut none = WorstN::new(0);
        assert!(!none.push(1, 0, ()) && none.is_empty());
    }

    #[test]
    fn agrees_with_a_full_sort() {
        let keys: Vec<u64> = (0..500u64).map(|i| (i * 7919) % 61).collect();
        let mut w = WorstN::new(10);
        for (i, &k) in keys.iter().enumerate() {
            w.push(k, i as u64, i);
        }
        let mut idx: Vec<usize> = (0..keys.len()).collect();
        idx.sort_by(|&a, &b| keys[b].cmp(&keys[a]).then(a.cmp(&b)));
        idx.truncate(10);
        assert_eq!(w.len(), 10);
        assert_eq!(w.into_vec(), idx);
    }
}
