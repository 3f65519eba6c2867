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

/// No route (a `next_hop` entry).
const NO_ROUTE: PortId = PortId::MAX;

pub struct Routes {
    /// adj[u] = (neighbour, link direction from u) in port order.
    adj: Vec<Vec<(usize, LinkDir)>>,
    /// Row-major, one row per node with two or more ports (a node with one port always
    /// takes it: [`Routes::next_single_port`]): `next_hop[row[node] * slots + d]` = the
    /// port toward the destination in slot `d`, or [`NO_ROUTE`]. A router's row is
    /// contiguous (a few kB even with thousands of destinations): forwarding stays in
    /// cache, and thousands of hosts cost no table.
    next_hop: Vec<PortId>,
    /// node -> its row of `next_hop` (u32::MAX: a node with at most one port).
    row: Vec<u32>,
    /// Destination slots (columns of `next_hop`).
    slots: usize,
    /// node -> destination slot
    slot: Vec<Option<u32>>,
    /// node -> connected component (nodes with the same number reach each other).
    comp: Vec<u32>,
}

/// Hop distances from `src` into `dist` (u32::MAX: unreachable).
fn bfs(adj: &[Vec<(usize, LinkDir)>], src: usize, dist: &mut [u32]) {
    dist.fill(u32::MAX);
    dist[src] = 0;
    let mut q = VecDeque::from([src]);
    while let Some(u) = q.pop_front() {
        for &(v, _) in &adj[u] {
            if dist[v] == u32::MAX {
                dist[v] = dist[u] + 1;
                q.push_back(v);
            }
        }
    }
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
        let mut uniq = Vec::new();
        for &d in dests {
            if slot[d].is_none() {
                slot[d] = Some(uniq.len() as u32);
                uniq.push(d);
            }
        }
        let slots = uniq.len();
        let mut row = vec![u32::MAX; n_nodes];
        let mut rows = 0;
        for (u, r) in row.iter_mut().enumerate() {
            if adj[u].len() > 1 {
                *r = rows;
                rows += 1;
            }
        }
        let routers: Vec<usize> = (0..n_nodes).filter(|&u| row[u] != u32::MAX).collect();
        let mut next_hop = vec![NO_ROUTE; rows as usize * slots];
        // Hop distances toward destination d come from a BFS. A destination on one link
        // (a host) is one hop beyond its only neighbour r, so every node other than r
        // and d picks the same port toward d as toward r: one BFS from r serves all of
        // r's hosts (a dumbbell of a thousand flows: two BFS, not two thousand).
        let source = |d: usize| match adj[d].as_slice() {
            [(r, _)] => *r,
            _ => d,
        };
        let mut order: Vec<usize> = (0..slots).collect();
        order.sort_by_key(|&s| source(uniq[s]));
        let mut dist = vec![u32::MAX; n_nodes];
        let mut from = usize::MAX;
        for s in order {
            let d = uniq[s];
            let src = source(d);
            if src != from {
                from = src;
                bfs(&adj, src, &mut dist);
            }
            for &u in &routers {
                if u == d || dist[u] == u32::MAX {
                    continue;
                }
                // each node picks the first port (in link order) toward a neighbour
                // one hop closer to d; r's neighbour one hop closer is d itself
                let k = if u == src && src != d {
                    adj[u].iter().position(|&(v, _)| v == d)
                } else {
                    adj[u]
                        .iter()
                        .position(|&(v, _)| dist[v].wrapping_add(1) == dist[u])
                };
                if let Some(k) = k {
                    next_hop[row[u] as usize * slots + s] = k as PortId;
                }
            }
        }
        let mut comp = vec![u32::MAX; n_nodes];
        for start in 0..n_nodes {
            if comp[start] != u32::MAX {
                continue;
            }
            comp[start] = start as u32;
            let mut q = VecDeque::from([start]);
            while let Some(u) = q.pop_front() {
                for &(v, _) in &adj[u] {
                    if comp[v] == u32::MAX {
                        comp[v] = start as u32;
                        q.push_back(v);
                    }
                }
            }
        }
        Routes {
            adj,
            next_hop,
            row,
            slots,
            slot,
            comp,
        }
    }

    /// The port node `node` sends on toward node `dst`.
    #[inline]
    pub fn next(&self, node: usize, dst: usize) -> Option<PortId> {
        let r = self.row[node];
        if r == u32::MAX {
            return match self.adj[node].len() {
                1 => self.next_single_port(node, dst),
                _ => None, // no port at all
            };
        }
        let s = (*self.slot.get(dst)?)? as usize;
        let p = self.next_hop[r as usize * self.slots + s];
        (p != NO_ROUTE).then_some(p)
    }

    /// [`Routes::next`] for a node with exactly one port (a host on one link): port 0
    /// toward every routed destination in its component, without the table (whose
    /// row for each of thousands of hosts would be a cache miss per packet).
    #[inline]
    pub fn next_single_port(&self, node: usize, dst: usize) -> Option<PortId> {
        let routed = matches!(self.slot.get(dst), Some(Some(_)));
        (routed && dst != node && self.comp[node] == self.comp[dst]).then_some(0)
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

    /// The table by the definition: a BFS from every destination, every node with a
    /// row picking its first port toward a neighbour one hop closer.
    fn table_by_definition(
        n: usize,
        links: &[(usize, usize)],
        dests: &[usize],
    ) -> Vec<Option<PortId>> {
        let r = Routes::compute(n, links, dests);
        let mut want = vec![];
        for u in 0..n {
            for d in 0..n {
                let Some(_) = r.slot[d] else { continue };
                if r.row[u] == u32::MAX {
                    continue;
                }
                let mut dist = vec![u32::MAX; n];
                bfs(&r.adj, d, &mut dist);
                let hop = (u != d && dist[u] != u32::MAX)
                    .then(|| {
                        r.adj[u]
                            .iter()
                            .position(|&(v, _)| dist[v].wrapping_add(1) == dist[u])
                    })
                    .flatten()
                    .map(|k| k as PortId);
                want.push((hop, r.next(u, d)));
            }
        }
        want.iter().for_each(|(w, got)| assert_eq!(w, got));
        want.into_iter().map(|(w, _)| w).collect()
    }

    #[test]
    fn one_bfs_per_hosts_router_gives_the_table_of_one_bfs_per_destination() {
        // Random graphs: routers in a sparse mesh (with parallel links), hosts on one
        // link each (some on another host, which hangs off a router in turn; a router with
        // one link and its host make a two-node component), isolated nodes;
        // destinations a random subset with repeats.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as usize
        };
        let mut routed = 0;
        for _ in 0..200 {
            let routers = 1 + next(6);
            let hosts = next(10);
            let n = routers + hosts + next(2);
            let mut links = vec![];
            for _ in 0..next(2 * routers as u64 + 1) {
                links.push((next(routers as u64), next(routers as u64)));
            }
            for h in routers..routers + hosts {
                if h > routers && next(8) == 0 {
                    links.push((h, h - 1));
                } else {
                    links.push((h, next(routers as u64)));
                }
            }
            let dests: Vec<usize> = (0..next(2 * n as u64 + 1))
                .map(|_| next(n as u64))
                .collect();
            let t = table_by_definition(n, &links, &dests);
            routed += t.iter().filter(|h| h.is_some()).count();
        }
        assert!(
            routed > 1000,
            "{routed} routed entries: the graphs were too thin"
        );
    }

    #[test]
    fn single_port_shortcut_agrees_with_the_table() {
        // Two components (0..=5 and 6..=8) with hosts on one link, routers, a parallel
        // pair; destinations a subset (so some nodes have no routes toward them).
        let links = [
            (0, 2),
            (1, 2),
            (2, 3),
            (3, 4),
            (3, 5),
            (3, 5),
            (6, 7),
            (7, 8),
        ];
        let n = 10; // node 9 is isolated
        for dests in [
            vec![0, 1, 4, 8],
            vec![4],
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        ] {
            let r = Routes::compute(n, &links, &dests);
            let mut checked = 0;
            for u in (0..n).filter(|&u| r.ports(u).len() == 1) {
                // reference: u reaches d (a routed destination other than u) by BFS
                let mut seen = vec![false; n];
                let mut q = VecDeque::from([u]);
                seen[u] = true;
                while let Some(x) = q.pop_front() {
                    for &(a, b) in &links {
                        for (p, o) in [(a, b), (b, a)] {
                            if p == x && !seen[o] {
                                seen[o] = true;
                                q.push_back(o);
                            }
                        }
                    }
                }
                for d in 0..n + 2 {
                    let want = (d < n && d != u && seen[d] && dests.contains(&d)).then_some(0);
                    assert_eq!(r.next_single_port(u, d), want, "node {u} toward {d}");
                    assert_eq!(r.next(u, d), want, "node {u} toward {d}");
                    checked += usize::from(want.is_some());
                }
            }
            assert!(checked > 0);
        }
    }
}
