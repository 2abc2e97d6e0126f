"""The formats a pack is written in, all from the same frozen task versions.

A pack is one zip, laid out so that each consumer finds its own files:

```
manifest.json                          name, version, task versions, counts, sha256 of every file
README.md                              what is where, for the person who unzips it
world_files_zipped/<world_id>.zip      every world state, once (the APEX-Agents / Archipelago layout)
tasks_and_rubrics.json                 APEX-Agents tasks            } apex
world_descriptions.json                APEX-Agents worlds           }
verifiers.json                         APEX-Agents grader input     }
eval_configs.json                      how the verifiers add up     }
healthbench.jsonl                      HealthBench-style rubric JSONL          healthbench
inspect/task.py (+ its data)           `inspect eval inspect/task.py`           inspect
hf/tasks.parquet, hf/README.md         a Hugging Face dataset                   huggingface
taskwright/                            our own format, importable into a project   taskwright
```

Each format is a FormatWriter (packs.formats.base) fed PackWorld and PackTask values
(packs.formats.records).
"""

from importlib import import_module

from packs.formats.base import FormatWriter

# key → (module, class, label). In the order the pack form lists them.
FORMATS: dict[str, tuple[str, str, str]] = {
    "apex": ("packs.formats.apex", "ApexWriter", "APEX-Agents / Archipelago (tasks, worlds, verifiers)"),
    "healthbench": ("packs.formats.healthbench", "HealthBenchWriter", "HealthBench-style rubric JSONL"),
    "inspect": ("packs.formats.inspect", "InspectWriter", "Inspect AI task folder"),
    "huggingface": ("packs.formats.huggingface", "HuggingFaceWriter", "Hugging Face dataset (Parquet + card)"),
    "taskwright": ("packs.formats.taskwright", "TaskwrightWriter", "Taskwright's own format (importable)"),
}
ALL_FORMATS = tuple(FORMATS)
FORMAT_CHOICES = [(key, label) for key, (_, _, label) in FORMATS.items()]


def writer_class(key: str) -> type[FormatWriter]:
    module, name, _ = FORMATS[key]
    return getattr(import_module(module), name)
