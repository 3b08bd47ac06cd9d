"""The Streamlit review app for otel-inputs; rendering logic lives in plain functions."""
