//! Static shortest-path routing (fewest hops) with a deterministic tie-break: among
//! equally short paths the next hop is reached over the link listed first in the
//! scenario, then by its direction.

use std::collections::VecDeque;

/// An outgoing link direction: (link index, 0 = forward a->b, 1 = reverse b->a).
pub type Port = (u32, u8);

pub struct Routes {
    /// For destination slot `d`, next_hop[d][node] = port to take, or None.
    next_hop: Vec<Vec<Option<Port>>>,
    /// node -> destination slot
    slot: Vec<Option<u32>>,
}

impl Routes {
    /// `links` are (a, b) node pairs; routes are computed only toward `dests`.
    pub fn compute(n_nodes: usize, links: &[(usize, usize)], dests: &[usize]) -> Routes {
        // adjacency: for each node, (neighbor, port) sorted by link index then direction.
        let mut adj: Vec<Vec<(usize, Port)>> = vec![Vec::new(); n_nodes];
        for (i, &(a, b)) in links.iter().enumerate() {
            adj[a].push((b, (i as u32, 0)));
            adj[b].push((a, (i as u32, 1)));
        }
        let mut slot = vec![None; n_nodes];
        let mut next_hop = Vec::new();
        for &d in dests {
            if slot[d].is_some() {
                continue;
            }
            slot[d] = Some(next_hop.len() as u32);
            // BFS from d gives hop distances; each node then picks the first port (in
            // link order) toward a neighbour one hop closer.
            let mut dist = vec![u32::MAX; n_nodes];
            dist[d] = 0;
            let mut q = VecDeque::from([d]);
            while let Some(u) = q.pop_front() {
                for &(v, _) in &adj[u] {
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        q.push_back(v);
                    }
                }
            }
            let table = (0..n_nodes)
                .map(|u| {
                    if u == d || dist[u] == u32::MAX {
                        return None;
                    }
                    adj[u]
                        .iter()
                        .find(|(v, _)| dist[*v] + 1 == dist[u])
                        .map(|(_, p)| *p)
                })
                .collect();
            next_hop.push(table);
        }
        Routes { next_hop, slot }
    }

    #[inline]
    pub fn next(&self, node: usize, dst: usize) -> Option<Port> {
        let s = self.slot[dst]? as usize;
        self.next_hop[s][node]
    }

    pub fn reachable(&self, from: usize, to: usize) -> bool {
        from == to || self.next(from, to).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn shortest_with_tie_break() {
        // 0 - 1 - 3 and 0 - 2 - 3 (equal); link 0 listed first wins.
        let links = [(0, 1), (0, 2), (1, 3), (2, 3)];
        let r = Routes::compute(4, &links, &[3, 0]);
        assert_eq!(r.next(0, 3), Some((0, 0)));
        assert_eq!(r.next(1, 3), Some((2, 0)));
        assert_eq!(r.next(3, 0), Some((2, 1)));
        let r2 = Routes::compute(5, &links, &[4]);
        assert!(!r2.reachable(0, 4));
    }
}
