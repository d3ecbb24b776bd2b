"""Logging model: writes one tagged line through every log channel a model has."""

import logging
import sys

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        logger = pb_utils.Logger
        logger.log_info("tag-logger-info")
        logger.log_warn("tag-logger-warn")
        logger.log_error("tag-logger-error")
        logger.log_verbose("tag-logger-verbose")
        logger.log("tag-logger-log-verbose", logger.VERBOSE)
        logger.log("tag-logger-log-info", logger.INFO)
        print("tag-print-initialize")
        print("tag-stderr-initialize", file=sys.stderr)
        # A named logger while nothing is configured: the record goes through the stub's handler.
        logging.getLogger("taglib").error("tag-logging-named-error")
        # Module-level functions call logging.basicConfig() first (stderr, "LEVEL:name:msg").
        logging.warning("tag-logging-warning")
        logging.getLogger("taglib").info("tag-logging-filtered-info")  # below the root's WARNING

    def execute(self, requests):
        print("tag-print-execute")
        pb_utils.Logger.log_info("tag-logger-execute")
        pb_utils.Logger.log_verbose("tag-logger-execute-verbose")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
