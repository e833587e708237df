//! Partition shapes → the directed links they cut. Pure: the caller supplies the nodes and the
//! random order (drawn from the simulation's RNG), so the shapes can be tested on their own.
//! Shapes follow Jepsen's nemesis (jepsen.nemesis: partition-random-halves, majorities-ring,
//! bridge).

use std::collections::BTreeSet;

/// A directed link: messages from `.0` to `.1`.
pub type Link = (String, String);

fn both_ways(a: &[String], b: &[String], links: &mut BTreeSet<Link>) {
    for x in a {
        for y in b {
            if x != y {
                links.insert((x.clone(), y.clone()));
                links.insert((y.clone(), x.clone()));
            }
        }
    }
}

/// `node` cut off from every other node.
pub fn isolate(node: &str, all: &[String]) -> BTreeSet<Link> {
    let mut links = BTreeSet::new();
    both_ways(&[node.to_string()], all, &mut links);
    links
}

/// `servers` (in a random order) split into a minority (the first ⌊(n−1)/2⌋) and a majority.
pub fn majority_minority(servers: &[String]) -> (BTreeSet<Link>, Vec<String>, Vec<String>) {
    let minority_size = (servers.len().saturating_sub(1)) / 2;
    let (minority, majority) = servers.split_at(minority_size);
    let mut links = BTreeSet::new();
    both_ways(minority, majority, &mut links);
    (links, minority.to_vec(), majority.to_vec())
}

/// Each server (in a random ring order) reaches only its two ring neighbours.
pub fn ring(servers: &[String]) -> BTreeSet<Link> {
    let n = servers.len();
    let mut links = BTreeSet::new();
    for i in 0..n {
        for j in 0..n {
            let distance = (i + n - j) % n;
            if i != j && distance != 1 && distance != n - 1 {
                links.insert((servers[i].clone(), servers[j].clone()));
            }
        }
    }
    links
}

/// Two halves joined only through the middle server of the random order.
pub fn bridge(servers: &[String]) -> (BTreeSet<Link>, String) {
    let middle = servers.len() / 2;
    let mut links = BTreeSet::new();
    both_ways(&servers[..middle], &servers[middle + 1..], &mut links);
    (links, servers.get(middle).cloned().unwrap_or_default())
}

/// Every pair of `a` × `b` cut both ways.
pub fn between(a: &[String], b: &[String]) -> BTreeSet<Link> {
    let mut links = BTreeSet::new();
    both_ways(a, b, &mut links);
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn reachable(links: &BTreeSet<Link>, from: &str, to: &str) -> bool {
        !links.contains(&(from.to_string(), to.to_string()))
    }

    #[test]
    fn isolated_node_reaches_nobody_and_nobody_reaches_it() {
        let all = names(&["s1", "s2", "s3", "c1"]);
        let links = isolate("s2", &all);
        assert_eq!(links.len(), 6);
        assert!(!reachable(&links, "s2", "c1") && !reachable(&links, "c1", "s2"));
        assert!(reachable(&links, "s1", "s3"));
    }

    #[test]
    fn majority_keeps_a_quorum() {
        let (links, minority, majority) = majority_minority(&names(&["s4", "s1", "s5", "s2", "s3"]));
        assert_eq!(minority, names(&["s4", "s1"]));
        assert_eq!(majority.len(), 3);
        assert_eq!(links.len(), 2 * 2 * 3);
        assert!(reachable(&links, "s5", "s3") && reachable(&links, "s4", "s1"));
    }

    #[test]
    fn ring_of_five_lets_each_server_see_a_majority_but_not_all() {
        let servers = names(&["s1", "s2", "s3", "s4", "s5"]);
        let links = ring(&servers);
        for (i, a) in servers.iter().enumerate() {
            let seen = servers.iter().filter(|b| *b != a && reachable(&links, a, b)).count();
            assert_eq!(seen, 2, "{a} sees its two neighbours");
            assert!(reachable(&links, a, &servers[(i + 1) % 5]));
        }
    }

    #[test]
    fn bridge_joins_the_halves() {
        let (links, middle) = bridge(&names(&["s1", "s2", "s3", "s4", "s5"]));
        assert_eq!(middle, "s3");
        assert!(!reachable(&links, "s1", "s5"));
        assert!(reachable(&links, "s1", "s3") && reachable(&links, "s3", "s5"));
    }

    #[test]
    fn three_node_ring_cuts_nothing() {
        assert!(ring(&names(&["s1", "s2", "s3"])).is_empty());
    }
}
