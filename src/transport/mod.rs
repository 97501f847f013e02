//! How clients reach the server: stdio ([`stdio`]), Streamable HTTP and the legacy SSE pair
//! ([`http`]), and the drain that lets requests in flight finish on shutdown ([`shutdown`]).

pub mod http;
pub mod shutdown;
pub mod stdio;
