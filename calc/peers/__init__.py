"""Other tools' estimators, reproduced: DeepSpeed's ZeRO-2/ZeRO-3 memory estimators and llm-analysis'
model-state and activation formulas, so the guide can compare their answers with ours.
"""
