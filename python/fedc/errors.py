"""fedc.Error: a failure of the C library, with its status code and message."""

# fedc_status (core.h) by name without the FEDC_ prefix, with C's values
# (python/tests/test_abi.py holds them equal).
STATUS_CODES = {"OK": 0, "EINVAL": 1, "ENOMEM": 2, "ETYPE": 3, "ESHAPE": 4, "EPARSE": 5, "EIO": 6,
                "ENOTFOUND": 7, "EUNSUPPORTED": 8, "ERANGE": 9, "ENONFINITE": 10, "EINTERNAL": 11}
_STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}


class Error(Exception):
    """Raised when fedc refuses something: bad shapes, a parse error, a closed handle.

    `status` is fedc's status code (the C enum fedc_status, e.g. 4 for FEDC_ESHAPE),
    `status_name` its name without the prefix ("ESHAPE"), and `message` fedc's detail
    message (fedc_errmsg), which names what failed and where.
    """

    def __init__(self, status, message):
        self.status = int(status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    @property
    def status_name(self):
        return _STATUS_NAMES.get(self.status, "status %d" % self.status)


# The codes by name, for `except fedc.Error as e: if e.status == fedc.ESHAPE`.
globals().update(STATUS_CODES)
