"""transformers' Trainer with `TrainingArguments(torch_compile=True)` on the zoo's Llama, run
unmodified by the command-line tests (torch.compile, then `python -m framegraph run`). It prints
the training losses as JSON on the last line."""

import json
import sys
import tempfile
import warnings

import torch


def main() -> None:
    warnings.simplefilter("ignore")
    from tests.models.zoo import build  # first: it lets torchvision import (see zoo.py)
    from transformers import Trainer, TrainingArguments
    from transformers.utils import logging

    logging.set_verbosity_error()
    model, args, _ = build("llama")
    model.train()
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    data = [{"input_ids": ids, "labels": ids.clone()}
            for ids in torch.randint(0, vocab, (8, 12), generator=generator)]
    with tempfile.TemporaryDirectory() as out:
        options = TrainingArguments(output_dir=out, torch_compile=True, torch_compile_backend="aot_eager",
                                    max_steps=3, per_device_train_batch_size=2, learning_rate=1e-3,
                                    logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=0,
                                    data_seed=0, dataloader_num_workers=0, disable_tqdm=True)
        trainer = Trainer(model=model, args=options, train_dataset=data)
        trainer.train()
    print(json.dumps([entry["loss"] for entry in trainer.state.log_history if "loss" in entry]))


if __name__ == "__main__":
    sys.exit(main())
