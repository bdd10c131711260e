"""`kproxy analyze`: a PySpark job that turns kproxy event logs into a leadership report.

The pipeline (each module one concern):

* `schema`   the Spark schema of an event line, derived from `kproxy.observe.events.EVENT_FIELDS`;
* `session`  a SparkSession with kproxy's defaults (UI off, loopback driver when local);
* `inputs`   reads JSON lines from files, directories, globs or Hadoop URIs, and sorts
  lines into events and rejects (malformed, unknown type, newer schema);
* `tables`   the aggregations (DataFrame in, DataFrame out);
* `job`      runs them, writes the Parquet tables and collects the report's figures
  (also a plain PySpark application: `spark-submit kproxy/analytics/job.py`);
* `plots`, `report`, `summary`   PNG plots, report.html, the stdout summary and
  summary.json;
* `progress` prints stage progress while Spark works;
* `output`   writes the report files next to the tables, locally or on a Hadoop URI;
* `cli`      `run_analyze(args)`, what `kproxy analyze` calls.

Only `job`, `cli`, `inputs`, `session`, `progress`, `tables` and `output` import PySpark;
the report and plots work on plain Python values.
"""
