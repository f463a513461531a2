"""Cohen's kappa as statsmodels and scikit-learn compute it, for
tests/it/calibration.rs. Reads JSON lines from stdin, each
{"label": ["pass", "fail", ...], "judge": [...]} (paired verdicts), and
writes one JSON line per input: statsmodels' kappa, its asymptotic
standard error and 95% interval on the 2 x 2 table (rows the label,
columns the judge, pass first), scikit-learn's cohen_kappa_score and
confusion_matrix on the same pairs; null where a reference says nan."""

import json
import math
import sys
import warnings

import numpy as np
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa

warnings.simplefilter("ignore")


def finite(value):
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


for line in sys.stdin:
    pairs = json.loads(line)
    label, judge = pairs["label"], pairs["judge"]
    matrix = confusion_matrix(label, judge, labels=["pass", "fail"])
    result = cohens_kappa(matrix)
    with np.errstate(all="ignore"):
        sklearn_kappa = cohen_kappa_score(label, judge, labels=["pass", "fail"])
    print(json.dumps({
        "kappa": finite(result.kappa),
        "stdKappa": finite(result.std_kappa),
        "low": finite(result.kappa_low),
        "high": finite(result.kappa_upp),
        "sklearnKappa": finite(sklearn_kappa),
        "confusion": matrix.tolist(),
    }))
