"""The GPU's SM clock, power draw and temperature while a benchmark runs.

Why: on the H200 a kernel's time in a sustained run can be well above its
time alone (f16 D=64 N=16384: 17.0 ms best, 19.9 ms mean over 50 launches,
bench/NOTES.md, 2026-11-29), and two implementations timed in the same
run may not run at the same clock.  Sampling the clock beside the timings
says whether a ratio is the kernels' or the power state's.

nvidia-smi samples in the background (its -lms loop) and stamps each sample
itself; a reader thread keeps them.  Its power.draw is, on the H200 with
driver 580, an average over the last second, so a row timed ~170 ms at a
time reads partly its neighbours' power (the clock is instantaneous);
bench/micro/sustained_power.py reads power.draw.instant for that reason.  window(spans) averages the samples that
fall inside the given wall-clock spans (time.time() values), so a row's
timed calls, interleaved with other rows' in rounds, each get their own.
"""
import datetime
import subprocess
import threading

QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu"


def parse_sample(line):
    """(epoch seconds, SM MHz, watts, degrees C) from one CSV line, or None
    for a line that is not a sample (a header, '[N/A]' fields, a message)."""
    fields = [f.strip() for f in line.split(",")]
    if len(fields) != 4:
        return None
    try:
        # nvidia-smi's timestamp is local time, as time.time() is epoch: convert.
        stamp = datetime.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        return stamp, float(fields[1]), float(fields[2]), float(fields[3])
    except ValueError:
        return None


class ClockLog:
    """nvidia-smi sampling one GPU every period_ms until stop()."""

    def __init__(self, gpu_id="0", period_ms=50, command="nvidia-smi"):
        self.argv = [command, f"--id={gpu_id}", f"--query-gpu={QUERY}",
                     "--format=csv,noheader,nounits", f"-lms={period_ms}"]
        self.samples = []
        self.error = None
        self._proc = None
        self._reader = None

    def start(self):
        """Starts sampling; on failure (no nvidia-smi, a bad id) records why in
        self.error and samples nothing: the benchmark itself goes on."""
        try:
            self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            self.error = f"{self.argv[0]}: {e}"
            return self
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self):
        for line in self._proc.stdout:
            sample = parse_sample(line)
            if sample:
                self.samples.append(sample)
            elif line.strip() and self.error is None and not self.samples:
                self.error = line.strip()   # e.g. "No devices were found"

    def stop(self):
        if self._proc:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._reader.join(timeout=5)
            self._proc = None

    def window(self, spans):
        """Mean SM clock and power and the highest temperature over the
        samples inside any (begin, end) span, with their count; None for
        no sample (spans shorter than the period can catch none)."""
        inside = [s for s in self.samples if any(b <= s[0] <= e for b, e in spans)]
        if not inside:
            return None
        return {"sm_mhz": round(sum(s[1] for s in inside) / len(inside)),
                "power_w": round(sum(s[2] for s in inside) / len(inside), 1),
                "temp_c": max(s[3] for s in inside), "clock_samples": len(inside)}
