"""Progress of long work (fits of many trees, Dataset builds): a tqdm bar
when tqdm is importable, plain lines on stderr otherwise; silent unless
``verbose``."""
import sys


class Progress:
    """Progress of ``total`` steps: a tqdm bar with the latest numbers as its
    postfix, or (without tqdm) a line every tenth of the way. Silent unless
    ``verbose``."""

    def __init__(self, total, verbose, description):
        self.verbose, self.total, self.done = bool(verbose), total, 0
        self.description = description
        self._bar = None
        if self.verbose:
            try:
                from tqdm.auto import tqdm
                self._bar = tqdm(total=total, desc=description, file=sys.stderr)
            except ImportError:
                pass

    def step(self, **numbers):
        """One step done; ``numbers`` (name -> float) are shown."""
        self.done += 1
        if not self.verbose:
            return
        text = {k: f"{v:.5g}" for k, v in numbers.items() if v is not None}
        if self._bar is not None:
            self._bar.set_postfix(text, refresh=False)
            self._bar.update(1)
        elif self.done == self.total or self.done % max(1, self.total // 10) == 0:
            shown = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in text.items())
            print(f"{self.description}: {self.done}/{self.total}"
                  f"{', ' + shown if shown else ''}", file=sys.stderr, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
