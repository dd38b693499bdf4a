"""fedc.Error: a failure of the C library, with its status code and message."""

_STATUS_NAMES = ["OK", "EINVAL", "ENOMEM", "ETYPE", "ESHAPE", "EPARSE", "EIO", "ENOTFOUND",
                 "EUNSUPPORTED", "ERANGE", "ENONFINITE", "EINTERNAL"]


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
        if 0 <= self.status < len(_STATUS_NAMES):
            return _STATUS_NAMES[self.status]
        return "status %d" % self.status


# The codes by name, for `except fedc.Error as e: if e.status == fedc.ESHAPE`.
for _i, _n in enumerate(_STATUS_NAMES):
    globals()[_n] = _i
