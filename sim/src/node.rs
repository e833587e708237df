//! Which simulated node the running task belongs to. madsim answers `gethostname` with the
//! node's name inside its tasks; that is how code reached through static functions (openraft's
//! `Instant::now()`, the transport's fault table) finds its node.

/// The name of the simulated node running the current task (`None` outside a node).
pub fn current_node_name() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length; gethostname writes at most that many
    // bytes, with a terminating zero when there is room.
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return None;
    }
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    std::str::from_utf8(&buffer[..end]).ok().map(str::to_string)
}
