//! The error of a kernel given bad user data (a singular matrix, an out-of-range argument):
//! the caller turns it into a diagnostic at the call's source position.

/// A user-caused error in a kernel: the DML operation and what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{op}: {message}")]
pub struct RuntimeError {
    /// the DML name of the operation (`solve`, `rand`, ...)
    pub op: &'static str,
    /// what is wrong, in the user's terms
    pub message: String,
}

impl RuntimeError {
    /// An invalid argument or input of `op`.
    pub fn invalid(op: &'static str, message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            op,
            message: message.into(),
        }
    }
}

/// The result of a kernel that can fail on user data.
pub type Result<T> = std::result::Result<T, RuntimeError>;
