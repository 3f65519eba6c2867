//! Static shortest-path routing (fewest hops) with a deterministic tie-break: among
//! equally short paths the next hop is reached over the link listed first in the
//! scenario, then by its direction.
//!
//! A node's ports are numbered in that same order: port `k` of node `u` is the `k`-th
//! entry of its adjacency list ([`Routes::ports`]), an outgoing link direction; the
//! reverse direction of the same link arrives on input port `k`.

use crate::element::PortId;
use std::collections::VecDeque;

/// An outgoing link direction: (link index, 0 = forward a->b, 1 = reverse b->a).
pub type LinkDir = (u32, u8);

pub struct Routes {
    /// adj[u] = (neighbour, link direction from u) in port order.
    adj: Vec<Vec<(usize, LinkDir)>>,
    /// For destination slot `d`, next_hop[d][node] = port to take, or None.
    next_hop: Vec<Vec<Option<PortId>>>,
    /// node -> destination slot
    slot: Vec<Option<u32>>,
}

impl Routes {
    /// `links` are (a, b) node pairs; routes are computed only toward `dests`.
    pub fn compute(n_nodes: usize, links: &[(usize, usize)], dests: &[usize]) -> Routes {
        let mut adj: Vec<Vec<(usize, LinkDir)>> = vec![Vec::new(); n_nodes];
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
                        .position(|(v, _)| dist[*v] + 1 == dist[u])
                        .map(|k| k as PortId)
                })
                .collect();
            next_hop.push(table);
        }
        Routes {
            adj,
            next_hop,
            slot,
        }
    }

    /// The port node `node` sends on toward node `dst`.
    #[inline]
    pub fn next(&self, node: usize, dst: usize) -> Option<PortId> {
        let s = (*self.slot.get(dst)?)? as usize;
        self.next_hop[s][node]
    }

    pub fn reachable(&self, from: usize, to: usize) -> bool {
        from == to || self.next(from, to).is_some()
    }

    /// Node `u`'s ports: (neighbour, outgoing link direction), in port order.
    pub fn ports(&self, u: usize) -> &[(usize, LinkDir)] {
        &self.adj[u]
    }

    /// The port on which node `u` receives what arrives over link direction `d` (whose
    /// reverse leaves from `u`).
    pub fn in_port(&self, u: usize, d: LinkDir) -> PortId {
        let rev = (d.0, 1 - d.1);
        self.adj[u]
            .iter()
            .position(|&(_, x)| x == rev)
            .expect("link direction ends at this node") as PortId
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
        assert_eq!(r.ports(0), &[(1, (0, 0)), (2, (1, 0))]);
        assert_eq!(r.next(0, 3), Some(0)); // over link 0
        assert_eq!(r.ports(1)[r.next(1, 3).unwrap() as usize].1, (2, 0));
        assert_eq!(r.ports(3)[r.next(3, 0).unwrap() as usize].1, (2, 1));
        assert_eq!(r.in_port(1, (0, 0)), 0); // 0 -> 1 over link 0 arrives on 1's port 0
        assert_eq!(r.in_port(3, (3, 0)), 1);
        let r2 = Routes::compute(5, &links, &[4]);
        assert!(!r2.reachable(0, 4));
        assert_eq!(
            r2.next(0, 3),
            None,
            "no routes toward a node that is no destination"
        );
    }
}
