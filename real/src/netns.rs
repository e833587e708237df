//! Partitions of real processes: each node of the run (server or client) in a network namespace
//! of its own, joined by a bridge, with an nftables table per namespace whose output chain drops
//! what the active partitions cut.
//!
//! Addresses: 10.213.T.N/24, N = 1.. for the nodes in order; the bridge (the orchestrator, the
//! resource) is .254. T is claimed for the run's life (see [`Subnet`]), so two runs at once never
//! share a subnet (with a shared one, a client of one run reached the other run's cluster). Names
//! start with `cs<pid>` so `coordsim real doctor` can find what a killed run left behind.
//! Everything is removed when the [`Network`] is dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// A directed link: packets from `.0` to `.1` are dropped (sim/core/src/nemesis/links.rs's `Link`).
pub use coordsim_sim::nemesis::links::Link;

pub const IP: &str = "/usr/sbin/ip";
pub const NFT: &str = "/usr/sbin/nft";

struct Host {
    ns: String,
    ip: Ipv4Addr,
}

pub struct Network {
    /// Held until the network is gone: no other run takes these addresses meanwhile.
    _subnet: Subnet,
    bridge: String,
    bridge_ip: Ipv4Addr,
    hosts: BTreeMap<String, Host>,
    /// Names of the namespaces created so far (for the cleanup of a half-built network).
    created: Vec<String>,
}

/// Why partitions cannot be made here, or `None` when they can.
pub fn unavailable() -> Option<String> {
    for tool in [IP, NFT] {
        if !std::path::Path::new(tool).exists() {
            return Some(format!("{tool} is missing (Debian iproute2, nftables)"));
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    None
}

fn run(program: &str, args: &[&str], input: Option<&str>) -> Result<(), String> {
    let mut command = Command::new(program);
    command.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    command.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = command.spawn().map_err(|e| format!("{program}: {e}"))?;
    if let Some(text) = input {
        child.stdin.take().expect("piped").write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

impl Network {
    /// One namespace per node in `nodes`, all on one bridge.
    pub fn create(nodes: &[String]) -> Result<Network, String> {
        if let Some(reason) = unavailable() {
            return Err(format!("partitions need network namespaces: {reason}"));
        }
        let pid = std::process::id();
        let claimed = Subnet::claim(pid)?;
        let subnet = claimed.octet;
        let prefix = format!("cs{pid}");
        let mut network = Network {
            _subnet: claimed,
            bridge: format!("{prefix}br"),
            bridge_ip: Ipv4Addr::new(10, 213, subnet, 254),
            hosts: BTreeMap::new(),
            created: Vec::new(),
        };
        let bridge = network.bridge.clone();
        run(IP, &["link", "add", &bridge, "type", "bridge"], None)?;
        run(IP, &["addr", "add", &format!("{}/24", network.bridge_ip), "dev", &bridge], None)?;
        run(IP, &["link", "set", &bridge, "up"], None)?;
        for (i, node) in nodes.iter().enumerate() {
            let ns = format!("{prefix}{node}");
            let ip = Ipv4Addr::new(10, 213, subnet, i as u8 + 1);
            let (outside, inside) = (format!("{ns}h"), format!("{ns}n"));
            run(IP, &["netns", "add", &ns], None)?;
            network.created.push(ns.clone());
            run(IP, &["link", "add", &outside, "type", "veth", "peer", "name", &inside], None)?;
            run(IP, &["link", "set", &inside, "netns", &ns], None)?;
            run(IP, &["link", "set", &outside, "master", &bridge, "up"], None)?;
            run(IP, &["-n", &ns, "addr", "add", &format!("{ip}/24"), "dev", &inside], None)?;
            run(IP, &["-n", &ns, "link", "set", &inside, "up"], None)?;
            run(IP, &["-n", &ns, "link", "set", "lo", "up"], None)?;
            network.hosts.insert(node.clone(), Host { ns, ip });
        }
        network.apply(&BTreeSet::new(), 0.0)?;
        Ok(network)
    }

    /// The address of `node` (the bridge's for the orchestrator and the resource).
    pub fn ip(&self, node: &str) -> Ipv4Addr {
        self.hosts.get(node).map_or(self.bridge_ip, |h| h.ip)
    }

    /// The network namespace `node` runs in (`ip netns` name), if it has one.
    pub fn namespace(&self, node: &str) -> Option<&str> {
        self.hosts.get(node).map(|h| h.ns.as_str())
    }

    pub fn bridge_ip(&self) -> Ipv4Addr {
        self.bridge_ip
    }

    /// `command` run inside `node`'s namespace (`ip netns exec` sets the namespace and execs the
    /// program: the pid stays the program's, for signals).
    pub fn wrap(&self, node: &str, command: &Command) -> Command {
        let Some(host) = self.hosts.get(node) else { return clone(command) };
        let mut wrapped = Command::new(IP);
        wrapped.args(["netns", "exec", &host.ns]).arg(command.get_program()).args(command.get_args());
        for (key, value) in command.get_envs() {
            if let Some(value) = value {
                wrapped.env(key, value);
            }
        }
        wrapped
    }

    /// Makes the cut links exactly `cut` and the packet loss `loss` (0 to 1): each namespace's
    /// output chain drops packets to the nodes its node may not reach (a node not in the network,
    /// such as the resource, is the bridge's address), then each packet to another node with
    /// probability `loss` (nftables `numgen random`). Loss also hits what clients send to the
    /// resource, not what servers send to the bridge: that is the orchestrator's observation of
    /// the cluster, which is not a link of the scenario's network.
    pub fn apply(&self, cut: &BTreeSet<Link>, loss: f64) -> Result<(), String> {
        let subnet = self.subnet();
        for (node, host) in &self.hosts {
            let mut rules = String::from(
                "table inet coordsim {\n  chain output {\n    type filter hook output priority 0; policy accept;\n",
            );
            for (_, to) in cut.iter().filter(|(from, _)| from == node) {
                rules.push_str(&format!("    ip daddr {} drop\n", self.ip(to)));
            }
            if let Some(threshold) = loss_threshold(loss) {
                let spared = if is_server(node) { format!(" ip daddr != {}", self.bridge_ip) } else { String::new() };
                rules.push_str(&format!(
                    "    ip daddr {subnet}/24 ip daddr != {}{spared} numgen random mod {LOSS_SCALE} < {threshold} drop\n",
                    host.ip
                ));
            }
            rules.push_str("  }\n}\n");
            // Delete and re-create the table in one transaction: no moment without rules.
            let script = format!("table inet coordsim\ndelete table inet coordsim\n{rules}");
            run(IP, &["netns", "exec", &host.ns, NFT, "-f", "-"], Some(&script))?;
        }
        Ok(())
    }

    /// Sends every TCP connection `node` opens to another node or to the bridge to its link proxy
    /// on 127.0.0.1:`port` (`crate::links`), except the proxy's own, marked `mark`.
    pub fn redirect(&self, node: &str, port: u16, mark: u32) -> Result<(), String> {
        let host = self.hosts.get(node).ok_or_else(|| format!("{node} has no namespace"))?;
        let script = format!(
            "table ip coordsim_links {{\n  chain output {{\n    type nat hook output priority -100; policy accept;\n    \
             meta mark {mark:#x} return\n    ip daddr {}/24 ip daddr != {} meta l4proto tcp redirect to :{port}\n  }}\n}}\n",
            self.subnet(),
            host.ip
        );
        run(IP, &["netns", "exec", &host.ns, NFT, "-f", "-"], Some(&script))
    }

    /// The network's address, 10.213.T.0.
    fn subnet(&self) -> Ipv4Addr {
        let [a, b, c, _] = self.bridge_ip.octets();
        Ipv4Addr::new(a, b, c, 0)
    }
}

/// Packet loss is drawn as `numgen random mod LOSS_SCALE < threshold`: rates to a millionth.
const LOSS_SCALE: u32 = 1_000_000;

/// The rule's threshold for a loss rate, or `None` for no loss.
fn loss_threshold(loss: f64) -> Option<u32> {
    let threshold = (loss.clamp(0.0, 1.0) * f64::from(LOSS_SCALE)).round() as u32;
    (threshold > 0).then_some(threshold)
}

/// Servers are `s1`, `s2`, ... (the run names its nodes so: `crate::run`).
fn is_server(node: &str) -> bool {
    node.starts_with('s') && node[1..].parse::<u32>().is_ok()
}

/// Where the subnets' claims are kept: one lock file per subnet.
const CLAIMS: &str = "/run/coordsim";

/// The third octet T of a run's 10.213.T.0/24, claimed by an exclusive lock on
/// `/run/coordsim/subnet-T.lock` (`flock`), which the kernel releases however the run ends, a
/// SIGKILL included. A subnet already on an interface of this machine (a killed run's bridge,
/// until `coordsim real doctor --clean` removes it) is passed over too.
pub struct Subnet {
    pub octet: u8,
    _lock: std::fs::File,
}

impl Subnet {
    /// Claims the first free subnet, trying from one drawn from `pid` (so that runs started at
    /// once rarely try the same one first).
    pub fn claim(pid: u32) -> Result<Subnet, String> {
        std::fs::create_dir_all(CLAIMS).map_err(|e| format!("{CLAIMS}: {e}"))?;
        let used = addresses_in_use()?;
        for step in 0..250u32 {
            let octet = ((pid + step) % 250) as u8;
            if used.iter().any(|ip| ip.octets()[..3] == [10, 213, octet]) {
                continue;
            }
            let path = format!("{CLAIMS}/subnet-{octet}.lock");
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| format!("{path}: {e}"))?;
            match file.try_lock() {
                Ok(()) => return Ok(Subnet { octet, _lock: file }),
                Err(std::fs::TryLockError::WouldBlock) => continue,
                Err(std::fs::TryLockError::Error(e)) => return Err(format!("{path}: {e}")),
            }
        }
        Err("every subnet 10.213.0-249.0/24 is claimed by a running real run or on an interface \
             (`coordsim real doctor`)"
            .into())
    }
}

/// The IPv4 addresses on this machine's interfaces (the root namespace's).
fn addresses_in_use() -> Result<Vec<Ipv4Addr>, String> {
    let output = Command::new(IP)
        .args(["-o", "-4", "addr", "show"])
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{IP}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{IP} -o -4 addr show: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(parse_addresses(&String::from_utf8_lossy(&output.stdout)))
}

/// The addresses of `ip -o -4 addr show` (lines like `5: br0    inet 10.213.7.254/24 ...`).
fn parse_addresses(text: &str) -> Vec<Ipv4Addr> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|w| *w == "inet")?;
            words.next()?.split('/').next()?.parse().ok()
        })
        .collect()
}

/// Removes what [`leftovers`] found; returns what could not be removed, with the reason.
pub fn clean_leftovers() -> Vec<String> {
    let (namespaces, links) = leftovers();
    let mut failed = Vec::new();
    // Links first: deleting a bridge's end of a veth takes the other end along.
    for link in links {
        if let Err(e) = run(IP, &["link", "del", &link], None)
            && std::path::Path::new(&format!("/sys/class/net/{link}")).exists()
        {
            failed.push(format!("link {link}: {e}"));
        }
    }
    for ns in namespaces {
        if let Err(e) = run(IP, &["netns", "del", &ns], None) {
            failed.push(format!("namespace {ns}: {e}"));
        }
    }
    failed
}

fn clone(command: &Command) -> Command {
    let mut copy = Command::new(command.get_program());
    copy.args(command.get_args());
    copy
}

impl Drop for Network {
    fn drop(&mut self) {
        // Delete the bridge's end of each veth pair (which takes the other end along) before the
        // namespace: a namespace whose sockets linger is freed late, and its veth with it.
        for ns in &self.created {
            let _ = run(IP, &["link", "del", &format!("{ns}h")], None);
            let _ = run(IP, &["netns", "del", ns], None);
        }
        let _ = run(IP, &["link", "del", &self.bridge], None);
    }
}

/// What a killed run left: namespaces (`ip netns del NAME`) and links, its bridge and veths
/// (`ip link del NAME`), named like ours with a pid that no longer lives.
pub fn leftovers() -> (Vec<String>, Vec<String>) {
    let stale = |dir: &str| -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = pid_of(&name)
                && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            {
                found.push(name);
            }
        }
        found.sort();
        found
    };
    (stale("/run/netns"), stale("/sys/class/net"))
}

fn pid_of(name: &str) -> Option<u32> {
    let digits: String = name.strip_prefix("cs")?.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rates_become_thresholds_to_a_millionth_and_servers_are_told_by_name() {
        assert_eq!(loss_threshold(0.0), None);
        assert_eq!(loss_threshold(0.2), Some(200_000));
        assert_eq!(loss_threshold(1.5), Some(LOSS_SCALE));
        assert_eq!(loss_threshold(0.0000001), None, "below a millionth is no loss");
        assert!(is_server("s1") && is_server("s12"));
        assert!(!is_server("c1") && !is_server("resource") && !is_server("s"));
    }

    #[test]
    fn addresses_are_read_from_ip_o_addr_show() {
        let text = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                    7: cs41br    inet 10.213.41.254/24 scope global cs41br\n";
        assert_eq!(parse_addresses(text), vec![Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(10, 213, 41, 254)]);
    }

    #[test]
    fn a_claimed_subnet_is_not_claimed_again_while_held() {
        if unavailable().is_some() {
            eprintln!("skipped: {}", unavailable().unwrap_or_default());
            return;
        }
        // The same starting point for both, as for two runs whose pids are 250 apart.
        let first = Subnet::claim(7).expect("a free subnet");
        let second = Subnet::claim(7).expect("another free subnet");
        assert_ne!(first.octet, second.octet);
        let octet = first.octet;
        drop(first);
        let again = Subnet::claim(7).expect("a free subnet");
        assert_eq!(again.octet, octet, "released with its holder");
    }
}
