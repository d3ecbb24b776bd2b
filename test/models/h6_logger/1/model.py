"""Issue 6 logging model: writes one tagged line through every log channel a model has."""

import logging
import sys

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        logger = pb_utils.Logger
        logger.log_info("h6-logger-info")
        logger.log_warn("h6-logger-warn")
        logger.log_error("h6-logger-error")
        logger.log_verbose("h6-logger-verbose")
        logger.log("h6-logger-log-verbose", logger.VERBOSE)
        logger.log("h6-logger-log-info", logger.INFO)
        print("h6-print-initialize")
        print("h6-stderr-initialize", file=sys.stderr)
        # A named logger while nothing is configured: the record goes through the stub's handler.
        logging.getLogger("h6lib").error("h6-logging-named-error")
        # Module-level functions call logging.basicConfig() first (stderr, "LEVEL:name:msg").
        logging.warning("h6-logging-warning")
        logging.getLogger("h6lib").info("h6-logging-filtered-info")  # below the root's WARNING

    def execute(self, requests):
        print("h6-print-execute")
        pb_utils.Logger.log_info("h6-logger-execute")
        pb_utils.Logger.log_verbose("h6-logger-execute-verbose")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
