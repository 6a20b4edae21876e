import io.aeron.archive.codecs.*;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Encodes one sample of every schema 101 message and the schema 100 MarkFileHeader with Aeron 1.15.1's generated
 * encoders and prints "Name hex" per line; tests/archive/test_codecs_jar.py builds the same samples and compares.
 */
public final class ArchiveCodecSamples
{
    private static final UnsafeBuffer BUFFER = new UnsafeBuffer(new byte[4096]);
    private static final MessageHeaderEncoder HEADER = new MessageHeaderEncoder();

    private static void emit(final String name, final int bodyLength)
    {
        final int length = MessageHeaderEncoder.ENCODED_LENGTH + bodyLength;
        final StringBuilder sb = new StringBuilder(name).append(' ');
        for (int i = 0; i < length; i++)
        {
            sb.append(String.format("%02x", BUFFER.getByte(i) & 0xFF));
        }
        System.out.println(sb);
        BUFFER.setMemory(0, BUFFER.capacity(), (byte)0);
    }

    public static void main(final String[] args)
    {
        final long a = 0x0102030405060708L, b = -2L, c = Long.MIN_VALUE, d = Long.MAX_VALUE, e = 12345678901L;
        final int i = 0x0A0B0C0D, j = -7, k = Integer.MIN_VALUE;

        emit("ControlResponse", new ControlResponseEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).relevantId(c).code(ControlResponseCode.ERROR)
            .errorMessage("unknown recording id 7").encodedLength());
        emit("ControlResponseOk", new ControlResponseEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(1).correlationId(2).relevantId(3).code(ControlResponseCode.RECORDING_UNKNOWN)
            .errorMessage("").encodedLength());
        emit("CatalogHeader", new CatalogHeaderEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .version(i).entryLength(1024).encodedLength());
        emit("RecordingDescriptorHeader", new RecordingDescriptorHeaderEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .length(i).valid((byte)1).reserved((byte)-3).encodedLength());
        emit("RecordingDescriptor", new RecordingDescriptorEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).startTimestamp(c).stopTimestamp(d)
            .startPosition(-1).stopPosition(a + 1).initialTermId(i).segmentFileLength(1 << 27)
            .termBufferLength(65536).mtuLength(1408).sessionId(k).streamId(j)
            .strippedChannel("aeron:udp?endpoint=localhost:40123")
            .originalChannel("aeron:udp?endpoint=localhost:40123|term-length=65536")
            .sourceIdentity("127.0.0.1:55555").encodedLength());
        emit("RecordingStarted", new RecordingStartedEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .recordingId(e).startPosition(a).sessionId(k).streamId(j).channel("aeron:ipc")
            .sourceIdentity("aeron:ipc").encodedLength());
        emit("RecordingProgress", new RecordingProgressEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .recordingId(e).startPosition(a).position(d).encodedLength());
        emit("RecordingStopped", new RecordingStoppedEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .recordingId(e).startPosition(a).stopPosition(c).encodedLength());
        emit("ConnectRequest", new ConnectRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .correlationId(a).responseStreamId(j).responseChannel("aeron:udp?endpoint=localhost:8020")
            .encodedLength());
        emit("CloseSessionRequest", new CloseSessionRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(b).encodedLength());
        emit("StartRecordingRequest", new StartRecordingRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).streamId(i).sourceLocation(SourceLocation.REMOTE)
            .channel("aeron:udp?endpoint=localhost:40124").encodedLength());
        emit("StopRecordingRequest", new StopRecordingRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).streamId(j).channel("aeron:ipc").encodedLength());
        emit("ReplayRequest", new ReplayRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).position(-1).length(d).replayStreamId(i)
            .replayChannel("aeron:udp?endpoint=localhost:40125").encodedLength());
        emit("StopReplayRequest", new StopReplayRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).replaySessionId(c).encodedLength());
        emit("ListRecordingsRequest", new ListRecordingsRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).fromRecordingId(e).recordCount(k).encodedLength());
        emit("ListRecordingsForUriRequest", new ListRecordingsForUriRequestEncoder()
            .wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).fromRecordingId(e).recordCount(i).streamId(j)
            .channel("endpoint=localhost").encodedLength());
        emit("ListRecordingRequest", new ListRecordingRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).encodedLength());
        emit("ExtendRecordingRequest", new ExtendRecordingRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).streamId(j).sourceLocation(SourceLocation.LOCAL)
            .channel("aeron:ipc?tags=1").encodedLength());
        emit("RecordingPositionRequest", new RecordingPositionRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).encodedLength());
        emit("TruncateRecordingRequest", new TruncateRecordingRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).position(d).encodedLength());
        emit("StopRecordingSubscriptionRequest", new StopRecordingSubscriptionRequestEncoder()
            .wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).subscriptionId(c).encodedLength());
        emit("StopPositionRequest", new StopPositionRequestEncoder().wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).recordingId(e).encodedLength());
        emit("FindLastMatchingRecordingRequest", new FindLastMatchingRecordingRequestEncoder()
            .wrapAndApplyHeader(BUFFER, 0, HEADER)
            .controlSessionId(a).correlationId(b).minRecordingId(e).sessionId(k).streamId(i)
            .channel("localhost:40126").encodedLength());

        final io.aeron.archive.codecs.mark.MessageHeaderEncoder markHeader =
            new io.aeron.archive.codecs.mark.MessageHeaderEncoder();
        emit("MarkFileHeader", new io.aeron.archive.codecs.mark.MarkFileHeaderEncoder()
            .wrapAndApplyHeader(BUFFER, 0, markHeader)
            .version(0).activityTimestamp(e).startTimestamp(e - 5).pid(4242).controlStreamId(10)
            .localControlStreamId(11).eventsStreamId(30).controlChannel("aeron:udp?endpoint=localhost:8010")
            .localControlChannel("aeron:ipc").eventsChannel("aeron:udp?endpoint=localhost:8030")
            .aeronDirectory("/dev/shm/aeron-test").encodedLength());
    }
}
