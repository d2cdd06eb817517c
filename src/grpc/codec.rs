//! The protobuf codec of the Nacos gRPC services: tonic's prost codec with
//! smaller buffers.
//!
//! tonic allocates an encode and a decode buffer for every call up front
//! (8 KiB each by default) and grows them in steps of that size. A Nacos
//! client's `BiRequestStream` call lives as long as its connection, so with
//! many connected clients those two buffers were a large part of what an idle
//! connection holds (heaptrack, 5,000 connected listeners: about 7 KiB of the
//! 27 KiB live per connection). Nacos messages are small (a request, a
//! config's content), so the buffers start at [`BUFFER_SIZE`]: a bigger
//! message grows them as before.

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// The first size, and the growth step, of a call's encode and decode buffer.
pub const BUFFER_SIZE: usize = 1024;
/// tonic's default: how much a streaming response batches before it yields.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// [`ProstCodec`] with [`BUFFER_SIZE`] buffers (named by `build.rs` as the
/// generated services' codec).
#[derive(Debug, Clone)]
pub struct SmallBufferCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SmallBufferCodec<T, U> {
    fn default() -> Self {
        SmallBufferCodec(PhantomData)
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD)
}

impl<T, U> Codec for SmallBufferCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}
