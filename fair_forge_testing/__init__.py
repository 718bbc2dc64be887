"""What the tests and the benchmarks share, so that neither imports the other.

- `fake_llm_server`: an OpenAI-compatible chat-completions server on 127.0.0.1 (the
  real `ChatOpenAI` and `ChatGroq` clients run against it), with scripted faults;
- `judge_server`: that server in a process of its own, as the benchmarks use it;
- `builders`: small `/run` bodies (turns, conversations, datasets) for tests;
- `workloads`: the benchmarks' seeded request workloads;
- `jobs_support`: conversations and a judge for the asynchronous jobs' tests;
- `handler_client`: `lambda_handler` called with real API Gateway proxy events (in process,
  or in a fresh interpreter to see every log line);
- `jobs_harness`: the jobs' AWS side (S3, KMS, Step Functions) on moto, workers in process;
- `cloudformation`: `template.yaml` as data.

Not part of the installed package (`pip install .` ships `fair_forge_core` only).
"""
