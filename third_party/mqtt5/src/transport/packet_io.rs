//! Packet I/O utilities for transport layer
//!
//! Async methods for reading and writing MQTT packets.

use crate::encoding::encode_variable_int;
use crate::error::{MqttError, Result};
use crate::packet::{FixedHeader, MqttPacket, Packet, PacketType};
use crate::transport::tls::{TlsReadHalf, TlsWriteHalf};
use crate::Transport;
use bytes::{Buf, BufMut, BytesMut};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Extension trait for Transport to add packet I/O methods
pub trait PacketIo: Transport {
    /// Read a complete MQTT packet
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    fn read_packet(
        &mut self,
        protocol_version: u8,
    ) -> impl Future<Output = Result<Packet>> + Send + '_ {
        async move {
            let mut header_buf = BytesMut::with_capacity(5);

            let mut byte = [0u8; 1];
            tracing::trace!("Attempting to read first byte of packet");
            let n = self.read(&mut byte).await?;
            if n == 0 {
                tracing::debug!("Connection closed - received 0 bytes when reading packet header");
                return Err(MqttError::ClientClosed);
            }
            tracing::trace!(
                "Read first byte: 0x{:02x} (packet_type={}, flags={})",
                byte[0],
                (byte[0] >> 4) & 0x0f,
                byte[0] & 0x0f
            );
            header_buf.put_u8(byte[0]);

            loop {
                let n = self.read(&mut byte).await?;
                if n == 0 {
                    tracing::debug!("Connection closed while reading remaining length");
                    return Err(MqttError::ClientClosed);
                }
                header_buf.put_u8(byte[0]);
                tracing::trace!("Read remaining length byte: 0x{:02x}", byte[0]);

                if (byte[0] & crate::constants::masks::CONTINUATION_BIT) == 0 {
                    break;
                }

                if header_buf.len() > 4 {
                    return Err(MqttError::MalformedPacket(
                        "Invalid remaining length encoding".to_string(),
                    ));
                }
            }

            let mut header_buf = header_buf.freeze();
            tracing::trace!("Fixed header bytes: {:02x?}", header_buf.as_ref());
            let fixed_header = FixedHeader::decode(&mut header_buf)?;
            tracing::debug!(
                "Decoded fixed header: packet_type={:?}, flags=0x{:02x}, remaining_length={}",
                fixed_header.packet_type,
                fixed_header.flags,
                fixed_header.remaining_length
            );

            let max_size = crate::constants::limits::MAX_PACKET_SIZE as usize;
            if fixed_header.remaining_length as usize > max_size {
                return Err(MqttError::PacketTooLarge {
                    size: fixed_header.remaining_length as usize,
                    max: max_size,
                });
            }

            if fixed_header.remaining_length > 10000 {
                tracing::debug!(
                    packet_type = ?fixed_header.packet_type,
                    remaining_length = fixed_header.remaining_length,
                    "Receiving large packet"
                );
            }

            let mut payload_buf = BytesMut::with_capacity(fixed_header.remaining_length as usize);
            payload_buf.resize(fixed_header.remaining_length as usize, 0);
            let mut bytes_read = 0;
            while bytes_read < payload_buf.len() {
                let n = self.read(&mut payload_buf[bytes_read..]).await?;
                if n == 0 {
                    return Err(MqttError::ClientClosed);
                }
                bytes_read += n;
            }

            if fixed_header.packet_type == PacketType::PubAck {
                tracing::trace!(payload_len = payload_buf.len(), "Decoding PUBACK packet");
            }

            let packet = Packet::decode_from_body_with_version(
                fixed_header.packet_type,
                &fixed_header,
                &mut payload_buf,
                protocol_version,
            )?;
            tracing::debug!(
                "Successfully decoded packet: {:?}",
                fixed_header.packet_type
            );
            Ok(packet)
        }
    }

    /// Write a complete MQTT packet
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    fn write_packet(&mut self, packet: Packet) -> impl Future<Output = Result<()>> + Send + '_ {
        async move {
            let mut buf = BytesMut::with_capacity(1024);
            encode_packet_to_buffer(&packet, &mut buf)?;
            self.write(&buf).await?;
            Ok(())
        }
    }
}

/// Helper function to encode a packet with fixed header
fn encode_packet<F>(
    buf: &mut BytesMut,
    packet_type: PacketType,
    flags: u8,
    encode_body: F,
) -> Result<()>
where
    F: FnOnce(&mut BytesMut) -> Result<()>,
{
    let mut body_buf = BytesMut::new();
    encode_body(&mut body_buf)?;

    let byte1 = (u8::from(packet_type) << 4) | (flags & crate::constants::masks::FLAGS);
    buf.put_u8(byte1);
    encode_variable_int(buf, u32::try_from(body_buf.len()).unwrap_or(u32::MAX))?;

    buf.put(body_buf);

    Ok(())
}

impl<T: Transport> PacketIo for T {}

/// Packet reader trait for split read halves
pub trait PacketReader {
    /// Read a complete MQTT packet
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    fn read_packet(
        &mut self,
        protocol_version: u8,
    ) -> impl Future<Output = Result<Packet>> + Send + '_;
}

/// Packet writer trait for split write halves  
pub trait PacketWriter {
    /// Write a complete MQTT packet
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    fn write_packet(&mut self, packet: Packet) -> impl Future<Output = Result<()>> + Send + '_;
}

/// Implementation for TCP read half
impl PacketReader for OwnedReadHalf {
    async fn read_packet(&mut self, protocol_version: u8) -> Result<Packet> {
        let mut header_buf = BytesMut::with_capacity(5);

        let mut byte = [0u8; 1];
        let n = self.read(&mut byte).await?;
        if n == 0 {
            return Err(MqttError::ClientClosed);
        }
        header_buf.put_u8(byte[0]);

        loop {
            let n = self.read(&mut byte).await?;
            if n == 0 {
                return Err(MqttError::ClientClosed);
            }
            header_buf.put_u8(byte[0]);

            if (byte[0] & crate::constants::masks::CONTINUATION_BIT) == 0 {
                break;
            }

            if header_buf.len() > 4 {
                return Err(MqttError::MalformedPacket(
                    "Invalid remaining length encoding".to_string(),
                ));
            }
        }

        let mut header_buf = header_buf.freeze();
        let fixed_header = FixedHeader::decode(&mut header_buf)?;

        let max_size = crate::constants::limits::MAX_PACKET_SIZE as usize;
        if fixed_header.remaining_length as usize > max_size {
            return Err(MqttError::PacketTooLarge {
                size: fixed_header.remaining_length as usize,
                max: max_size,
            });
        }

        let mut payload_buf = BytesMut::with_capacity(fixed_header.remaining_length as usize);
        payload_buf.resize(fixed_header.remaining_length as usize, 0);
        let mut bytes_read = 0;
        while bytes_read < payload_buf.len() {
            let n = self.read(&mut payload_buf[bytes_read..]).await?;
            if n == 0 {
                return Err(MqttError::ClientClosed);
            }
            bytes_read += n;
        }

        Packet::decode_from_body_with_version(
            fixed_header.packet_type,
            &fixed_header,
            &mut payload_buf,
            protocol_version,
        )
    }
}

/// Helper function to encode any packet to a buffer.
///
/// # Errors
/// Returns an error if packet encoding fails.
pub fn encode_packet_to_buffer(packet: &Packet, buf: &mut BytesMut) -> Result<()> {
    match packet {
        Packet::Connect(p) => {
            encode_packet(buf, PacketType::Connect, 0, |buf| p.encode_body(buf))?;
        }
        Packet::ConnAck(p) => {
            encode_packet(buf, PacketType::ConnAck, 0, |buf| p.encode_body(buf))?;
        }
        Packet::Publish(p) => {
            let flags = p.flags();
            let body_size = p.body_encoded_size();
            let byte1 =
                (u8::from(PacketType::Publish) << 4) | (flags & crate::constants::masks::FLAGS);
            buf.put_u8(byte1);
            encode_variable_int(buf, u32::try_from(body_size).unwrap_or(u32::MAX))?;
            p.encode_body_direct(buf)?;
        }
        Packet::PubAck(p) => {
            encode_packet(buf, PacketType::PubAck, 0, |buf| p.encode_body(buf))?;
        }
        Packet::PubRec(p) => {
            encode_packet(buf, PacketType::PubRec, 0, |buf| p.encode_body(buf))?;
        }
        Packet::PubRel(p) => {
            encode_packet(buf, PacketType::PubRel, 0x02, |buf| p.encode_body(buf))?;
        }
        Packet::PubComp(p) => {
            encode_packet(buf, PacketType::PubComp, 0, |buf| p.encode_body(buf))?;
        }
        Packet::Subscribe(p) => {
            encode_packet(buf, PacketType::Subscribe, 0x02, |buf| p.encode_body(buf))?;
        }
        Packet::SubAck(p) => {
            encode_packet(buf, PacketType::SubAck, 0, |buf| p.encode_body(buf))?;
        }
        Packet::Unsubscribe(p) => {
            encode_packet(buf, PacketType::Unsubscribe, 0x02, |buf| p.encode_body(buf))?;
        }
        Packet::UnsubAck(p) => {
            encode_packet(buf, PacketType::UnsubAck, 0, |buf| p.encode_body(buf))?;
        }
        Packet::PingReq => encode_packet(buf, PacketType::PingReq, 0, |_| Ok(()))?,
        Packet::PingResp => encode_packet(buf, PacketType::PingResp, 0, |_| Ok(()))?,
        Packet::Disconnect(p) => {
            encode_packet(buf, PacketType::Disconnect, 0, |buf| p.encode_body(buf))?;
        }
        Packet::Auth(p) => {
            encode_packet(buf, PacketType::Auth, 0, |buf| p.encode_body(buf))?;
        }
    }
    Ok(())
}

const READ_CHUNK: usize = 4096;

#[derive(Clone, Debug)]
pub(crate) struct ReadBudget {
    permits: Arc<Semaphore>,
    limit: usize,
}

impl ReadBudget {
    #[cfg(feature = "transport-quic")]
    #[must_use]
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    #[cfg(feature = "transport-quic")]
    #[must_use]
    pub(crate) fn share(&self) -> ReadShare {
        ReadShare {
            budget: self.clone(),
            reserved: None,
        }
    }

    #[cfg(feature = "transport-quic")]
    pub(crate) fn close(&self) {
        self.permits.close();
    }
}

pub type ReadPermit = OwnedSemaphorePermit;

#[derive(Debug)]
pub(crate) struct ReadShare {
    budget: ReadBudget,
    reserved: Option<ReadPermit>,
}

impl ReadShare {
    #[cfg(feature = "transport-quic")]
    pub(crate) fn budget(&self) -> &ReadBudget {
        &self.budget
    }

    async fn reserve(&mut self, frame_len: usize) -> Result<()> {
        if self.reserved.is_some() || frame_len <= READ_CHUNK {
            return Ok(());
        }
        let too_large = MqttError::PacketTooLarge {
            size: frame_len,
            max: self.budget.limit,
        };
        if frame_len > self.budget.limit {
            return Err(too_large);
        }
        let count = u32::try_from(frame_len).map_err(|_| too_large)?;
        let permit = Arc::clone(&self.budget.permits)
            .acquire_many_owned(count)
            .await
            .map_err(|_| MqttError::ClientClosed)?;
        self.reserved = Some(permit);
        Ok(())
    }
}

pub(crate) trait ChunkReader {
    fn read_chunk(&mut self, chunk: &mut [u8]) -> impl Future<Output = Result<usize>> + Send;
}

/// Reads one packet, keeping every byte received so far in `read_buffer`.
///
/// The future is cancel-safe: all progress lives in `read_buffer`, the only
/// await is a single transport read into a stack chunk, and bytes belonging to
/// the next packet stay in the buffer for the next call.
///
/// # Errors
/// Returns error if reading from transport fails or packet is malformed
pub async fn read_packet_reusing_buffer<T: Transport>(
    transport: &mut T,
    protocol_version: u8,
    read_buffer: &mut BytesMut,
    max_packet_size: usize,
) -> Result<Packet> {
    loop {
        if let Some(packet) =
            decode_buffered_packet(read_buffer, protocol_version, max_packet_size)?
        {
            return Ok(packet);
        }
        let mut chunk = [0u8; READ_CHUNK];
        let n = transport.read(&mut chunk).await?;
        if n == 0 {
            return Err(MqttError::ClientClosed);
        }
        read_buffer.extend_from_slice(&chunk[..n]);
    }
}

pub(crate) async fn read_packet_within_budget<R: ChunkReader>(
    reader: &mut R,
    protocol_version: u8,
    read_buffer: &mut BytesMut,
    max_packet_size: usize,
    mut share: Option<&mut ReadShare>,
) -> Result<(Packet, Option<ReadPermit>)> {
    loop {
        if let (Some(share), Some(frame_len)) = (
            share.as_deref_mut(),
            announced_frame_len(read_buffer, max_packet_size)?,
        ) {
            share.reserve(frame_len).await?;
        }
        if let Some(packet) =
            decode_buffered_packet(read_buffer, protocol_version, max_packet_size)?
        {
            return Ok((packet, share.and_then(|share| share.reserved.take())));
        }
        let mut chunk = [0u8; READ_CHUNK];
        let n = reader.read_chunk(&mut chunk).await?;
        if n == 0 {
            return Err(MqttError::ClientClosed);
        }
        read_buffer.extend_from_slice(&chunk[..n]);
    }
}

fn buffered_frame(
    read_buffer: &[u8],
    max_packet_size: usize,
) -> Result<Option<(usize, FixedHeader)>> {
    let Some(header_len) = fixed_header_len(read_buffer)? else {
        return Ok(None);
    };
    let mut header_slice: &[u8] = &read_buffer[..header_len];
    let fixed_header = FixedHeader::decode(&mut header_slice)?;
    let frame_len = header_len + fixed_header.remaining_length as usize;
    if frame_len > max_packet_size {
        return Err(MqttError::PacketTooLarge {
            size: frame_len,
            max: max_packet_size,
        });
    }
    Ok(Some((header_len, fixed_header)))
}

pub(crate) fn announced_frame_len(read_buffer: &[u8], max_packet_size: usize) -> Result<Option<usize>> {
    Ok(buffered_frame(read_buffer, max_packet_size)?
        .map(|(header_len, fixed_header)| header_len + fixed_header.remaining_length as usize))
}

/// Decodes the next complete packet in `read_buffer`, or `None` while it is incomplete.
///
/// # Errors
/// Returns `PacketTooLarge` if the packet exceeds `max_packet_size`, or a decode
/// error if the packet is malformed.
pub fn decode_buffered_packet(
    read_buffer: &mut BytesMut,
    protocol_version: u8,
    max_packet_size: usize,
) -> Result<Option<Packet>> {
    let Some((header_len, fixed_header)) = buffered_frame(read_buffer, max_packet_size)? else {
        return Ok(None);
    };
    let frame_len = header_len + fixed_header.remaining_length as usize;
    if read_buffer.len() < frame_len {
        return Ok(None);
    }
    let mut frame = read_buffer.split_to(frame_len);
    frame.advance(header_len);
    Packet::decode_from_body_with_version(
        fixed_header.packet_type,
        &fixed_header,
        &mut frame,
        protocol_version,
    )
    .map(Some)
}

/// Reads one packet from a byte stream, buffering partial reads in `read_buffer`.
///
/// # Errors
/// Returns an error if the stream fails or closes, or the packet is oversized or malformed.
pub async fn read_packet_from_stream<R: AsyncRead + Unpin>(
    reader: &mut R,
    protocol_version: u8,
    read_buffer: &mut BytesMut,
    max_packet_size: usize,
) -> Result<Packet> {
    loop {
        if let Some(packet) =
            decode_buffered_packet(read_buffer, protocol_version, max_packet_size)?
        {
            return Ok(packet);
        }
        if read_buffer.capacity() - read_buffer.len() < READ_CHUNK {
            read_buffer.reserve(READ_CHUNK);
        }
        if reader.read_buf(read_buffer).await? == 0 {
            return Err(MqttError::ClientClosed);
        }
    }
}

fn fixed_header_len(buf: &[u8]) -> Result<Option<usize>> {
    for (index, byte) in buf.iter().enumerate().skip(1) {
        if (byte & crate::constants::masks::CONTINUATION_BIT) == 0 {
            return Ok(Some(index + 1));
        }
        if index == 4 {
            return Err(MqttError::MalformedPacket(
                "Invalid remaining length encoding".to_string(),
            ));
        }
    }
    Ok(None)
}

/// Implementation for TCP write half
impl PacketWriter for OwnedWriteHalf {
    async fn write_packet(&mut self, packet: Packet) -> Result<()> {
        let mut buf = BytesMut::with_capacity(1024);
        encode_packet_to_buffer(&packet, &mut buf)?;
        self.write_all(&buf).await?;
        Ok(())
    }
}

/// Implementation for TLS read half
impl PacketReader for TlsReadHalf {
    async fn read_packet(&mut self, protocol_version: u8) -> Result<Packet> {
        let mut header_buf = BytesMut::with_capacity(5);

        let mut byte = [0u8; 1];
        let n = self.read(&mut byte).await?;
        if n == 0 {
            return Err(MqttError::ClientClosed);
        }
        header_buf.put_u8(byte[0]);

        loop {
            let n = self.read(&mut byte).await?;
            if n == 0 {
                return Err(MqttError::ClientClosed);
            }
            header_buf.put_u8(byte[0]);

            if (byte[0] & crate::constants::masks::CONTINUATION_BIT) == 0 {
                break;
            }

            if header_buf.len() > 4 {
                return Err(MqttError::MalformedPacket(
                    "Invalid remaining length encoding".to_string(),
                ));
            }
        }

        let mut header_buf = header_buf.freeze();
        let fixed_header = FixedHeader::decode(&mut header_buf)?;

        let max_size = crate::constants::limits::MAX_PACKET_SIZE as usize;
        if fixed_header.remaining_length as usize > max_size {
            return Err(MqttError::PacketTooLarge {
                size: fixed_header.remaining_length as usize,
                max: max_size,
            });
        }

        let mut payload_buf = BytesMut::with_capacity(fixed_header.remaining_length as usize);
        payload_buf.resize(fixed_header.remaining_length as usize, 0);
        let mut bytes_read = 0;
        while bytes_read < payload_buf.len() {
            let n = self.read(&mut payload_buf[bytes_read..]).await?;
            if n == 0 {
                return Err(MqttError::ClientClosed);
            }
            bytes_read += n;
        }

        Packet::decode_from_body_with_version(
            fixed_header.packet_type,
            &fixed_header,
            &mut payload_buf,
            protocol_version,
        )
    }
}

/// Implementation for TLS write half
impl PacketWriter for TlsWriteHalf {
    async fn write_packet(&mut self, packet: Packet) -> Result<()> {
        let mut buf = BytesMut::with_capacity(1024);
        encode_packet_to_buffer(&packet, &mut buf)?;
        self.write_all(&buf).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::connack::ConnAckPacket;
    use crate::packet::publish::PublishPacket;
    use crate::packet::subscribe::{SubscribePacket, SubscriptionOptions, TopicFilter};
    use crate::protocol::v5::properties::Properties;
    use crate::protocol::v5::reason_codes::ReasonCode;
    use crate::transport::mock::MockTransport;
    use crate::QoS;
    use std::collections::VecDeque;
    use tokio::sync::mpsc;

    struct ChunkTransport {
        chunks: mpsc::UnboundedReceiver<Vec<u8>>,
        pending: VecDeque<u8>,
    }

    impl ChunkTransport {
        fn new() -> (mpsc::UnboundedSender<Vec<u8>>, Self) {
            let (tx, chunks) = mpsc::unbounded_channel();
            (
                tx,
                Self {
                    chunks,
                    pending: VecDeque::new(),
                },
            )
        }
    }

    impl Transport for ChunkTransport {
        fn connect(&mut self) -> impl Future<Output = Result<()>> + Send {
            std::future::ready(Ok(()))
        }

        async fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
            if self.pending.is_empty() {
                match self.chunks.recv().await {
                    Some(chunk) => self.pending.extend(chunk),
                    None => return Ok(0),
                }
            }
            let mut copied = 0;
            while copied < buf.len() {
                match self.pending.pop_front() {
                    Some(byte) => {
                        buf[copied] = byte;
                        copied += 1;
                    }
                    None => break,
                }
            }
            Ok(copied)
        }

        fn write(&mut self, _buf: &[u8]) -> impl Future<Output = Result<()>> + Send {
            std::future::ready(Ok(()))
        }

        fn close(&mut self) -> impl Future<Output = Result<()>> + Send {
            std::future::ready(Ok(()))
        }
    }

    fn encoded_publish(topic: &str, payload: &[u8]) -> Vec<u8> {
        let mut publish = PublishPacket::new(topic, payload.to_vec(), QoS::AtLeastOnce);
        publish.packet_id = Some(7);
        let mut buf = BytesMut::new();
        encode_packet_to_buffer(&Packet::Publish(publish), &mut buf).unwrap();
        buf.to_vec()
    }

    #[test]
    fn buffered_decode_reassembles_split_packet_and_enforces_maximum() {
        let bytes = encoded_publish("split", b"payload");
        let mut buffer = BytesMut::from(&bytes[..4]);
        assert!(decode_buffered_packet(&mut buffer, 5, 1024)
            .unwrap()
            .is_none());
        buffer.extend_from_slice(&bytes[4..]);
        assert!(matches!(
            decode_buffered_packet(&mut buffer, 5, 1024).unwrap(),
            Some(Packet::Publish(p)) if p.topic_name == "split"
        ));
        assert!(buffer.is_empty());

        let mut oversized = BytesMut::from(&bytes[..3]);
        assert!(matches!(
            decode_buffered_packet(&mut oversized, 5, bytes.len() - 1),
            Err(MqttError::PacketTooLarge { .. })
        ));
    }

    #[tokio::test]
    async fn read_survives_cancellation_mid_packet() {
        let (tx, mut transport) = ChunkTransport::new();
        let bytes = encoded_publish("cancel/safe", b"hello world");
        let (first, second) = bytes.split_at(3);
        tx.send(first.to_vec()).unwrap();
        let mut read_buffer = BytesMut::with_capacity(64);

        tokio::select! {
            biased;
            result = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024) => {
                panic!("packet completed from a partial frame: {result:?}");
            }
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        assert_eq!(read_buffer.len(), first.len());

        tx.send(second.to_vec()).unwrap();
        let packet = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap();
        match packet {
            Packet::Publish(publish) => {
                assert_eq!(publish.topic_name, "cancel/safe");
                assert_eq!(publish.payload.as_ref(), b"hello world");
                assert_eq!(publish.packet_id, Some(7));
            }
            other => panic!("unexpected packet {other:?}"),
        }
        assert!(read_buffer.is_empty());
    }

    #[tokio::test]
    async fn read_keeps_next_packet_bytes_in_buffer() {
        let (tx, mut transport) = ChunkTransport::new();
        let mut bytes = encoded_publish("first", b"1");
        bytes.extend(encoded_publish("second", b"22"));
        bytes.extend(crate::constants::packets::PINGREQ_BYTES);
        tx.send(bytes).unwrap();
        let mut read_buffer = BytesMut::with_capacity(8);

        let first = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap();
        let second = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap();
        let third = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap();
        assert!(matches!(first, Packet::Publish(p) if p.topic_name == "first"));
        assert!(matches!(second, Packet::Publish(p) if p.topic_name == "second"));
        assert!(matches!(third, Packet::PingReq));
        assert!(read_buffer.is_empty());
    }

    #[tokio::test]
    async fn read_rejects_oversized_packet_before_reading_body() {
        let (tx, mut transport) = ChunkTransport::new();
        tx.send(encoded_publish("big", &[0u8; 300])).unwrap();
        let mut read_buffer = BytesMut::new();
        let err = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 100)
            .await
            .unwrap_err();
        assert!(matches!(err, MqttError::PacketTooLarge { .. }));
    }

    #[tokio::test]
    async fn read_rejects_invalid_remaining_length_encoding() {
        let (tx, mut transport) = ChunkTransport::new();
        tx.send(vec![0x30, 0x80, 0x80, 0x80, 0x80, 0x01]).unwrap();
        let mut read_buffer = BytesMut::new();
        let err = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap_err();
        assert!(matches!(err, MqttError::MalformedPacket(_)));
    }

    #[tokio::test]
    async fn read_reports_closed_transport() {
        let (tx, mut transport) = ChunkTransport::new();
        tx.send(vec![0x30]).unwrap();
        drop(tx);
        let mut read_buffer = BytesMut::new();
        let err = read_packet_reusing_buffer(&mut transport, 5, &mut read_buffer, 1024)
            .await
            .unwrap_err();
        assert!(matches!(err, MqttError::ClientClosed));
    }

    #[tokio::test]
    async fn test_read_packet_pingresp() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        transport
            .add_incoming_data(&crate::constants::packets::PINGRESP_BYTES)
            .await;

        let packet = transport.read_packet(5).await.unwrap();
        assert!(matches!(packet, Packet::PingResp));
    }

    #[tokio::test]
    async fn test_read_packet_pingreq() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        transport
            .add_incoming_data(&crate::constants::packets::PINGREQ_BYTES)
            .await;

        let packet = transport.read_packet(5).await.unwrap();
        assert!(matches!(packet, Packet::PingReq));
    }

    #[tokio::test]
    async fn test_read_packet_connack() {
        use crate::packet::connack::ConnAckPacket;

        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let connack = ConnAckPacket {
            protocol_version: 5,
            session_present: false,
            reason_code: ReasonCode::Success,
            properties: Properties::new(),
        };

        let mut data = BytesMut::new();
        connack.encode(&mut data).unwrap();
        transport.add_incoming_data(&data).await;

        let packet = transport.read_packet(5).await.unwrap();
        match packet {
            Packet::ConnAck(connack) => {
                assert!(!connack.session_present);
                assert_eq!(connack.reason_code, ReasonCode::Success);
            }
            _ => panic!("Expected CONNACK packet"),
        }
    }

    #[tokio::test]
    async fn test_read_packet_publish() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let topic = "test/topic";
        let payload = b"Hello MQTT";

        let mut buf = BytesMut::new();

        crate::encoding::encode_string(&mut buf, topic).unwrap();

        buf.put_u8(0x00);

        buf.extend_from_slice(payload);

        let mut data = BytesMut::new();
        data.put_u8(0x30);
        crate::encoding::encode_variable_int(&mut data, u32::try_from(buf.len()).unwrap()).unwrap();
        data.extend_from_slice(&buf);

        transport.add_incoming_data(&data).await;

        let packet = transport.read_packet(5).await.unwrap();
        match packet {
            Packet::Publish(publish) => {
                assert_eq!(publish.topic_name, "test/topic");
                assert_eq!(&publish.payload[..], b"Hello MQTT");
                assert_eq!(publish.qos, QoS::AtMostOnce);
                assert_eq!(publish.packet_id, None);
            }
            _ => panic!("Expected PUBLISH packet"),
        }
    }

    #[tokio::test]
    async fn test_read_packet_invalid_remaining_length() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let mut data = BytesMut::new();
        data.put_u8(crate::constants::fixed_header::PUBLISH_BASE);
        data.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
        transport.add_incoming_data(&data).await;

        let result = transport.read_packet(5).await;
        assert!(result.is_err());
        if let Err(e) = result {
            match e {
                MqttError::MalformedPacket(_) => {}
                _ => panic!("Expected MalformedPacket error, got: {e:?}"),
            }
        }
    }

    #[tokio::test]
    async fn test_read_packet_connection_closed() {
        let mut transport = MockTransport::new();

        let result = transport.read_packet(5).await;
        assert!(result.is_err());
    }

    #[tokio::test]
    async fn test_write_packet_pingreq() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        transport.write_packet(Packet::PingReq).await.unwrap();

        let written = transport.get_written_data().await;
        assert_eq!(written, crate::constants::packets::PINGREQ_BYTES.to_vec());
    }

    #[tokio::test]
    async fn test_write_packet_publish() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let publish = PublishPacket {
            topic_name: "test".to_string(),
            payload: vec![1, 2, 3].into(),
            qos: QoS::AtLeastOnce,
            retain: false,
            dup: false,
            packet_id: Some(123),
            properties: Properties::new(),
            protocol_version: 5,
            stream_id: None,
        };

        transport
            .write_packet(Packet::Publish(publish))
            .await
            .unwrap();

        let written = transport.get_written_data().await;

        assert_eq!(written[0] >> 4, u8::from(PacketType::Publish));
        assert_eq!(written[0] & crate::constants::masks::FLAGS, 0x02);

        assert!(written.len() > 2 + 4 + 2 + 3);
    }

    #[tokio::test]
    async fn test_write_packet_subscribe() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let subscribe = SubscribePacket {
            packet_id: 456,
            properties: Properties::new(),
            filters: vec![TopicFilter {
                filter: "test/+".to_string(),
                options: SubscriptionOptions {
                    qos: QoS::AtLeastOnce,
                    no_local: false,
                    retain_as_published: false,
                    retain_handling: crate::packet::subscribe::RetainHandling::SendAtSubscribe,
                },
            }],
            protocol_version: 5,
        };

        transport
            .write_packet(Packet::Subscribe(subscribe))
            .await
            .unwrap();

        let written = transport.get_written_data().await;

        assert_eq!(written[0], 0x82);
        assert!(written.len() > 2);
    }

    #[tokio::test]
    async fn test_roundtrip_packets() {
        let test_packets = vec![
            Packet::PingReq,
            Packet::PingResp,
            Packet::ConnAck(ConnAckPacket {
                session_present: true,
                reason_code: ReasonCode::Success,
                properties: Properties::new(),
                protocol_version: 5,
            }),
        ];

        for packet in test_packets {
            let mut write_transport = MockTransport::new();
            write_transport.connect().await.unwrap();
            write_transport.write_packet(packet.clone()).await.unwrap();

            let data = write_transport.get_written_data().await;

            let mut read_transport = MockTransport::new();
            read_transport.connect().await.unwrap();
            read_transport.add_incoming_data(&data).await;

            let read_packet = read_transport.read_packet(5).await.unwrap();

            match (&packet, &read_packet) {
                (Packet::PingReq, Packet::PingReq) | (Packet::PingResp, Packet::PingResp) => {}
                (Packet::ConnAck(a), Packet::ConnAck(b)) => {
                    assert_eq!(a.session_present, b.session_present);
                    assert_eq!(a.reason_code, b.reason_code);
                }
                _ => panic!("Packet type mismatch"),
            }
        }
    }

    #[tokio::test]
    async fn test_encode_packet_helper() {
        let mut buf = BytesMut::new();

        encode_packet(&mut buf, PacketType::PingReq, 0, |_| Ok(())).unwrap();

        assert_eq!(buf.len(), 2);
        assert_eq!(buf[0], crate::constants::fixed_header::PINGREQ);
        assert_eq!(buf[1], 0x00);
    }

    #[tokio::test]
    async fn test_variable_length_encoding() {
        let mut transport = MockTransport::new();
        transport.connect().await.unwrap();

        let mut large_payload = vec![0u8; 200];
        for (i, byte) in large_payload.iter_mut().enumerate() {
            *byte = u8::try_from(i % 256).expect("modulo 256 always fits in u8");
        }

        let publish = PublishPacket {
            topic_name: "test".to_string(),
            payload: large_payload.into(),
            qos: QoS::AtMostOnce,
            retain: false,
            dup: false,
            packet_id: None,
            properties: Properties::new(),
            protocol_version: 5,
            stream_id: None,
        };

        transport
            .write_packet(Packet::Publish(publish))
            .await
            .unwrap();

        let written = transport.get_written_data().await;

        assert!(written[1] & crate::constants::masks::CONTINUATION_BIT != 0);
        assert!(written.len() > 200);
    }

    #[cfg(feature = "transport-quic")]
    #[tokio::test]
    async fn a_reservation_waits_until_earlier_ones_are_released() {
        let budget = ReadBudget::new(3 * READ_CHUNK);
        let mut first = budget.share();
        let mut second = budget.share();
        assert!(first.reserve(2 * READ_CHUNK).await.is_ok());
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            second.reserve(READ_CHUNK + 1),
        )
        .await;
        assert!(waited.is_err());
        assert!(budget.share().reserve(READ_CHUNK).await.is_ok());
        drop(first.reserved.take());
        assert!(second.reserve(READ_CHUNK + 1).await.is_ok());
        assert!(matches!(
            budget.share().reserve(3 * READ_CHUNK + 1).await,
            Err(MqttError::PacketTooLarge { .. })
        ));
        budget.close();
        assert!(matches!(
            budget.share().reserve(READ_CHUNK + 1).await,
            Err(MqttError::ClientClosed)
        ));
    }

    #[test]
    fn an_announced_size_does_not_allocate_before_its_bytes_arrive() {
        let mut read_buffer = BytesMut::from(&[0x30, 0xFF, 0xFF, 0xFF, 0x7F][..]);
        assert!(matches!(
            decode_buffered_packet(&mut read_buffer, 5, usize::MAX),
            Ok(None)
        ));
        assert!(read_buffer.capacity() < READ_CHUNK);
    }
}
