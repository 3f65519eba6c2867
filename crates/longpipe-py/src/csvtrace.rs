//! Time series written to CSV files as the run goes (`run(..., trace_dir=D)`), so that
//! memory stays flat however long the run: per traced flow `flow{id}-timeseries.csv`,
//! `flow{id}-segments.csv` and `flow{id}-rtt.csv` in D, the same columns as
//! `Result.timeseries()`, `.segments()` and `.rtt()`. Times are exact decimal seconds
//! (the integer nanoseconds, never rounded through a float); an unset ssthresh is `inf`.

use longpipe_core::tcp::FlowTrace;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Mutex;

/// ssthresh values at or above this are "not set" (as `SSTHRESH_INFINITE` in api.py).
const SSTHRESH_INFINITE: u64 = u64::MAX / 4;

struct FlowFiles {
    ts: BufWriter<File>,
    seg: BufWriter<File>,
    rtt: BufWriter<File>,
}

#[derive(Default)]
struct State {
    flows: BTreeMap<usize, FlowFiles>,
    /// The first write error; later chunks are dropped and `finish` reports it.
    err: Option<io::Error>,
    /// Closed by a cancel: the files are shut and later chunks dropped, so the caller
    /// may remove the directory while the simulation thread winds down.
    closed: bool,
}

pub struct CsvTraces {
    dir: PathBuf,
    st: Mutex<State>,
}

/// `ns` as decimal seconds, exactly: 1500000000 -> "1.5", 0 -> "0.0", 1 -> "0.000000001".
fn secs(w: &mut impl Write, ns: u64) -> io::Result<()> {
    let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return write!(w, "{s}.0");
    }
    let mut digits = format!("{frac:09}");
    while digits.ends_with('0') {
        digits.pop();
    }
    write!(w, "{s}.{digits}")
}

impl CsvTraces {
    pub fn new(dir: PathBuf) -> Self {
        CsvTraces {
            dir,
            st: Mutex::default(),
        }
    }

    fn open(&self, id: usize) -> io::Result<FlowFiles> {
        let mk = |name: &str, header: &str| -> io::Result<BufWriter<File>> {
            let mut w = BufWriter::with_capacity(
                1 << 16,
                File::create(self.dir.join(format!("flow{id}-{name}.csv")))?,
            );
            w.write_all(header.as_bytes())?;
            Ok(w)
        };
        Ok(FlowFiles {
            ts: mk("timeseries", "t,cwnd,ssthresh,snd_una,snd_max\n")?,
            seg: mk("segments", "t,seq,len,retx\n")?,
            rtt: mk("rtt", "t,rtt\n")?,
        })
    }

    fn append(f: &mut FlowFiles, t: &FlowTrace) -> io::Result<()> {
        for i in 0..t.t_ns.len() {
            let w = &mut f.ts;
            secs(w, t.t_ns[i])?;
            write!(w, ",{},", t.cwnd[i])?;
            if t.ssthresh[i] >= SSTHRESH_INFINITE {
                w.write_all(b"inf")?;
            } else {
                write!(w, "{}", t.ssthresh[i])?;
            }
            writeln!(w, ",{},{}", t.snd_una[i], t.snd_max[i])?;
        }
        for i in 0..t.seg_t_ns.len() {
            let w = &mut f.seg;
            secs(w, t.seg_t_ns[i])?;
            let retx = if t.seg_retx[i] { "True" } else { "False" };
            writeln!(w, ",{},{},{retx}", t.seg_seq[i], t.seg_len[i])?;
        }
        for i in 0..t.rtt_t_ns.len() {
            let w = &mut f.rtt;
            secs(w, t.rtt_t_ns[i])?;
            w.write_all(b",")?;
            secs(w, t.rtt_ns[i])?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Appends a chunk of flow `id`'s samples (creating its files on the first one).
    pub fn write(&self, id: usize, t: &FlowTrace) {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.err.is_some() || st.closed {
            return;
        }
        let r = match st.flows.get_mut(&id) {
            Some(f) => Self::append(f, t),
            None => self.open(id).and_then(|mut f| {
                let r = Self::append(&mut f, t);
                st.flows.insert(id, f);
                r
            }),
        };
        if let Err(e) = r {
            st.err = Some(e);
        }
    }

    /// Stops writing: waits for a chunk being written, closes every file without
    /// flushing what is buffered, and drops every later chunk. After it returns, the
    /// simulation thread never touches the directory again (a cancelled run's files
    /// are removed at once, without waiting for the thread to end).
    pub fn close(&self) {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        st.closed = true;
        for (_, f) in std::mem::take(&mut st.flows) {
            for w in [f.ts, f.seg, f.rtt] {
                drop(w.into_parts()); // the file, closed; its buffer, discarded
            }
        }
    }

    /// Flushes and syncs every file; the first error of the whole run, if any.
    pub fn finish(&self) -> io::Result<()> {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = st.err.take() {
            return Err(e);
        }
        for f in st.flows.values_mut() {
            for w in [&mut f.ts, &mut f.seg, &mut f.rtt] {
                w.flush()?;
                w.get_ref().sync_all()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::secs;

    fn s(ns: u64) -> String {
        let mut v = Vec::new();
        secs(&mut v, ns).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn seconds_are_exact_decimals() {
        assert_eq!(s(0), "0.0");
        assert_eq!(s(1), "0.000000001");
        assert_eq!(s(1_500_000_000), "1.5");
        assert_eq!(s(2_000_000_000), "2.0");
        assert_eq!(s(123_456_789_012), "123.456789012");
        assert_eq!(s(10_000_000), "0.01");
        assert_eq!(s(u64::MAX), "18446744073.709551615");
    }
}
