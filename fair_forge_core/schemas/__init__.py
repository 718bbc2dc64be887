"""Pydantic models at the library's boundary: what an evaluation takes and returns.

Request side (`Dataset`, `Batch`, tool calls, `EvaluationConfig`) rejects unknown
fields, so a misspelt option (``"treshold"``) is an error naming the field rather
than a silently ignored setting. Types are strict: ``"k": "3"``, ``"k": true`` or
``"threshold": "0.7"`` are errors, never coerced (an int is accepted where a float
is expected, as JSON has one number type). Floats reject NaN and infinities.

Datasets serialised by alquimia-fair-forge (`Dataset.model_dump()`) are accepted as
they are: their per-turn ``logprobs`` and ``weight`` are read and ignored (see
`input_warnings`), ``language: null`` means "english", and a
``ground_truth_agentic`` without ``expected_tools`` (the original's default ``{}``)
means "tools not evaluated" (``"expected_tools": []`` means "no tool expected").

Result side mirrors docs/response.md and docs/statistics.md. Fields that a mode or a
situation does not
produce are ``None`` (JSON ``null``), never a made-up number.

Modules: `request` (what an evaluation takes; `config`, its options), `result` (what it returns; `comparison`, its
paired comparison of two agents; `efficiency`, the result side of `config.efficiency`; `base`,
the result models' base),
`adaptive` (the per-task report of adaptive attempts), `calibration` (the judge against human labels: `POST /calibrate`'s request and report) and
`json_input` (reading a request's JSON strictly). Import from this package.
"""

from fair_forge_core.schemas.adaptive import (
    ADAPTIVE_BIASED_FIELDS,
    AdaptiveAttempts,
    AdaptiveDecision,
    AdaptiveResult,
    AdaptiveTask,
)
from fair_forge_core.schemas.agent_error import MAX_AGENT_ERROR_DETAIL, AgentError, AgentErrorCause
from fair_forge_core.schemas.calibration import (
    CALIBRATION_CONFIDENCE,
    BestThreshold,
    CalibrationConfig,
    CalibrationReport,
    CalibrationRequest,
    CategoryAgreement,
    ConfusionTable,
    LabelledPair,
    PairResult,
    Proportion,
    UnscoredPair,
)
from fair_forge_core.schemas.checks import CheckCause, CheckOutcome, CheckResult, CheckScope
from fair_forge_core.schemas.comparison import (
    AttemptTest,
    ChangedTask,
    ComparedMetric,
    Comparison,
    McNemarTest,
    MetricComparison,
    Population,
)
from fair_forge_core.schemas.config import (
    MAX_CONNECTORS,
    MAX_JUDGE_SAMPLES,
    MAX_K,
    PRIOR_RANGE,
    TOOL_WEIGHT_KEYS,
    CompareConfig,
    EvaluationConfig,
    StatisticalMode,
    StructuredOutputMethod,
    ToolWeights,
)
from fair_forge_core.schemas.efficiency import (
    ConversationEfficiency,
    EfficiencyAggregate,
    EfficiencyComparison,
    EfficiencyMeasure,
    EfficiencySpread,
)
from fair_forge_core.schemas.json_input import (
    LoneSurrogate,
    NonFiniteNumber,
    describe_json_error,
    did_you_mean,
    error_message,
    field_path,
    loads_json,
)
from fair_forge_core.schemas.request import (
    ORIGINAL_TURN_FIELDS,
    AgenticTrace,
    AgentUsage,
    Batch,
    ConnectorSpec,
    Dataset,
    ExpectedToolCall,
    GroundTruthAgentic,
    Reference,
    RunRequest,
    ToolCall,
    ToolPolicy,
    TraceSource,
    TraceSpan,
    TracesRunRequest,
    Unscored,
    UnscoredCause,
    input_warnings,
)
from fair_forge_core.schemas.result import (
    AggregatedMetrics,
    ConversationMetrics,
    CurvePoint,
    EvaluationResult,
    GoalCheck,
    InteractionResult,
    JudgeConsensus,
    JudgeProvenance,
    JudgeVote,
    LabelledTask,
    PerTaskMetrics,
    Provenance,
    RateEstimate,
    Readiness,
    ReadinessStatus,
    StateCheck,
    StateDifference,
    TaskLabel,
    TaskStability,
    ToolCorrectnessScore,
    ToolPolicyCheck,
    ToolPolicyViolation,
)

__all__ = [
    "ADAPTIVE_BIASED_FIELDS",
    "CALIBRATION_CONFIDENCE",
    "MAX_AGENT_ERROR_DETAIL",
    "MAX_CONNECTORS",
    "MAX_JUDGE_SAMPLES",
    "MAX_K",
    "ORIGINAL_TURN_FIELDS",
    "PRIOR_RANGE",
    "TOOL_WEIGHT_KEYS",
    "AdaptiveAttempts",
    "AdaptiveDecision",
    "AdaptiveResult",
    "AdaptiveTask",
    "AgentError",
    "AgentErrorCause",
    "AgentUsage",
    "AgenticTrace",
    "AggregatedMetrics",
    "AttemptTest",
    "Batch",
    "BestThreshold",
    "CalibrationConfig",
    "CalibrationReport",
    "CalibrationRequest",
    "CategoryAgreement",
    "ChangedTask",
    "CheckCause",
    "CheckOutcome",
    "CheckResult",
    "CheckScope",
    "CompareConfig",
    "ComparedMetric",
    "Comparison",
    "ConfusionTable",
    "ConnectorSpec",
    "ConversationEfficiency",
    "ConversationMetrics",
    "CurvePoint",
    "Dataset",
    "EfficiencyAggregate",
    "EfficiencyComparison",
    "EfficiencyMeasure",
    "EfficiencySpread",
    "EvaluationConfig",
    "EvaluationResult",
    "ExpectedToolCall",
    "GoalCheck",
    "GroundTruthAgentic",
    "InteractionResult",
    "JudgeConsensus",
    "JudgeProvenance",
    "JudgeVote",
    "LabelledPair",
    "LabelledTask",
    "LoneSurrogate",
    "McNemarTest",
    "MetricComparison",
    "NonFiniteNumber",
    "PairResult",
    "PerTaskMetrics",
    "Population",
    "Proportion",
    "Provenance",
    "RateEstimate",
    "Readiness",
    "ReadinessStatus",
    "Reference",
    "RunRequest",
    "StateCheck",
    "StateDifference",
    "StatisticalMode",
    "StructuredOutputMethod",
    "TaskLabel",
    "TaskStability",
    "ToolCall",
    "ToolCorrectnessScore",
    "ToolPolicy",
    "ToolPolicyCheck",
    "ToolPolicyViolation",
    "ToolWeights",
    "TraceSource",
    "TraceSpan",
    "TracesRunRequest",
    "Unscored",
    "UnscoredCause",
    "UnscoredPair",
    "describe_json_error",
    "did_you_mean",
    "error_message",
    "field_path",
    "input_warnings",
    "loads_json",
]
