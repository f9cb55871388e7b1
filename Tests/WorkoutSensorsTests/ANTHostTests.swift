import Testing
import WorkoutSensors

/// Splits bytes into frames (A4, length, id, payload, checksum); the tail that is not a whole frame
/// is dropped.
private func frames(_ bytes: [UInt8]) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var index = 0
    while index + 1 < bytes.count {
        let end = index + Int(bytes[index + 1]) + 4
        guard end <= bytes.count else { break }
        result.append(Array(bytes[index..<end]))
        index = end
    }
    return result
}

private func hex(_ frame: [UInt8]) -> String {
    frame.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
}

/// The stick's answer to one host frame, as the ANT Message Protocol and Usage document says:
/// startup (0x6F, reason 0x20) to a reset, capabilities (0x54) to a request for them, a channel
/// response (0x40: channel, message id, code) to every configuration message.
private func answer(_ frame: [UInt8], channels: UInt8 = 8, refuse: UInt8? = nil, code: UInt8 = 0x15) -> [UInt8] {
    let id = frame[2]
    switch id {
    case 0x4A: return antFrame(0x6F, [0x20])
    case 0x4D where frame[4] == 0x54: return antFrame(0x54, [channels, 8, 0, 0x3A, 0, 0, 0, 0])
    default: return antFrame(0x40, [frame[3], id, id == refuse ? code : 0])
    }
}

/// Runs a host against a scripted stick until nothing more is written; returns the frames sent.
private func configure(
    _ host: inout ANTHost, channels: UInt8 = 8, refuse: UInt8? = nil, code: UInt8 = 0x15, now: Double = 0
) -> [[UInt8]] {
    var sent: [[UInt8]] = []
    var pending = frames(host.connected(now: now))
    while let frame = pending.first {
        pending.removeFirst()
        sent.append(frame)
        pending += frames(host.receive(answer(frame, channels: channels, refuse: refuse, code: code), now: now))
        if sent.count > 200 { break }
    }
    return sent
}

private let testKey = (try? ANTNetworkKey(hex: "0123456789ABCDEF")) ?? ANTNetworkKey(bytes: [1, 2, 3, 4, 5, 6, 7, 8])!

@Suite("ANT host: configuring a USB stick")
struct ANTHostTests {
    /// The configuration a host sends for a heart-rate channel (wildcard) and a power channel pinned to
    /// device 4711, byte for byte. The expected frames were made with an independent implementation,
    /// openant 1.3.4 (`openant.base.message.Message(id, data).get()`), from the ANT Message Protocol's
    /// layouts: reset, request capabilities, network key on network 0, lib config 0x80, then per
    /// channel assign (slave 0x00, network 0), channel id, search timeout 12 (30 s), period (8070,
    /// 8182), RF 57, open.
    @Test func theConfigurationBytesMatchTheProtocolDocumentByteForByte() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, profiles: [.heartRate], pinned: [.power: 4711]))
        let sent = configure(&host).map(hex)
        #expect(
            sent == [
                "A4 01 4A 00 EF",
                "A4 02 4D 00 54 BF",
                "A4 09 46 00 01 23 45 67 89 AB CD EF EB",
                "A4 02 6E 00 80 48",
                "A4 03 42 00 00 00 E5",
                "A4 05 51 00 00 00 78 00 88",
                "A4 02 44 00 0C EE",
                "A4 03 43 00 86 1F 7D",
                "A4 02 45 00 39 DA",
                "A4 01 4B 00 EE",
                "A4 03 42 01 00 00 E4",
                "A4 05 51 01 67 12 0B 00 8F",
                "A4 02 44 01 0C EF",
                "A4 03 43 01 F6 1F 0C",
                "A4 02 45 01 39 DB",
                "A4 01 4B 01 EF",
            ])
        #expect(host.configured)
        #expect(host.extendedData)
        #expect(host.takeEvents().contains(.configured([.heartRate, .power])))
    }

    /// Nothing pinned: a wildcard channel per profile in priority order, never more than the stick has.
    @Test func wildcardChannelsFollowThePriorityOrderUpToTheSticksChannelCount() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey))
        let sent = configure(&host, channels: 4)
        let assigned = sent.filter { $0[2] == 0x51 }.map { Int($0[6]) }
        #expect(assigned == [120, 11, 121, 124])  // heart rate, power, speed and cadence, foot pod
        #expect(sent.filter { $0[2] == 0x51 }.allSatisfy { $0[4] == 0 && $0[5] == 0 })  // wildcard 0
        #expect(host.channels.count == 4)

        var eight = ANTHost(plan: ANTHostPlan(networkKey: testKey))
        let all = configure(&eight, channels: 8).filter { $0[2] == 0x51 }.map { Int($0[6]) }
        #expect(all == [120, 11, 121, 124, 17, 123, 122])
    }

    /// A non-zero response code stops the configuration with an error naming the message and the code;
    /// the host starts over (reset) after a wait.
    @Test func aRefusedMessageBecomesATypedErrorAndTheHostStartsOver() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, profiles: [.heartRate], reopenInitial: 0.5))
        let sent = configure(&host, refuse: 0x43)
        #expect(sent.last?[2] == 0x43)
        let events = host.takeEvents()
        let error = ANTHostError.refused(message: 0x43, code: 0x15, channel: 0)
        #expect(events.contains(.failed(error)))
        #expect(error.description.contains("channel messaging period (0x43)"))
        #expect(error.description.contains("CHANNEL_IN_WRONG_STATE"))
        #expect(!host.configured)
        #expect(host.tick(now: 0.1).isEmpty)  // waiting
        #expect(frames(host.tick(now: 1)).first.map(hex) == "A4 01 4A 00 EF")  // reset again
    }

    /// A stick that does not answer: the message is sent again, then the host reports it and starts over.
    @Test func anUnansweredMessageIsSentAgainThenReported() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, responseTimeout: 1))
        #expect(frames(host.connected(now: 0)).map(hex) == ["A4 01 4A 00 EF"])
        #expect(frames(host.tick(now: 1.1)).map(hex) == ["A4 01 4A 00 EF"])
        #expect(frames(host.tick(now: 2.2)).map(hex) == ["A4 01 4A 00 EF"])
        #expect(host.tick(now: 3.3).isEmpty)
        #expect(host.takeEvents().contains(.failed(.noAnswer(message: 0x4A))))
        #expect(host.counters.retries == 2)
    }

    /// A wildcard channel pairs with the first device its extended data names; after a search timeout
    /// and the channel's close it is reopened after the back-off with that device's number.
    @Test func aChannelKeepsItsDeviceAndIsReopenedAfterASearchTimeout() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, profiles: [.heartRate], reopenInitial: 1, reopenMaximum: 4))
        _ = configure(&host)
        _ = host.takeEvents()
        let data = antFrame(0x4E, [0, 0x04, 0xFF, 0, 0x10, 0x9A, 0x13, 0x20, 0x48, 0x80, 0x97, 0x11, 120, 1])
        _ = host.receive(data, now: 1)
        let device = ANTDeviceID(number: 0x1197, type: 120, transmissionType: 1)
        #expect(host.takeEvents() == [.found(channel: 0, profile: .heartRate, device: device)])
        let lost = host.receive(antFrame(0x40, [0, 1, 0x08]) + antFrame(0x40, [0, 1, 0x01]) + antFrame(0x40, [0, 1, 0x07]), now: 2)
        #expect(lost.isEmpty)
        let events = host.takeEvents()
        #expect(events.first == .lost(channel: 0, profile: .heartRate, device: device, event: 0x08))
        #expect(events.contains(.searchTimedOut(channel: 0, profile: .heartRate)))
        #expect(host.tick(now: 2.5).isEmpty)  // back-off: 1 s
        let reopen = frames(host.tick(now: 3.1))
        #expect(reopen.map(hex) == ["A4 05 51 00 97 11 78 00 " + hex([0xA4 ^ 5 ^ 0x51 ^ 0 ^ 0x97 ^ 0x11 ^ 0x78 ^ 0])])
        let open = frames(host.receive(antFrame(0x40, [0, 0x51, 0]), now: 3.2))
        #expect(open.map(hex) == ["A4 01 4B 00 EE"])
    }

    /// The stick's own reset (an unexpected startup message) starts the configuration over.
    @Test func anUnexpectedStartupReconfigures() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, profiles: [.heartRate]))
        _ = configure(&host)
        #expect(host.configured)
        let again = frames(host.receive(antFrame(0x6F, [0x01]), now: 5))
        #expect(again.map(hex) == ["A4 02 4D 00 54 BF"])
        #expect(!host.configured)
    }

    /// Older sticks refuse lib config: the host turns extended messages on with 0x66 instead.
    @Test func libConfigRefusedFallsBackToEnableExtendedMessages() {
        var host = ANTHost(plan: ANTHostPlan(networkKey: testKey, profiles: [.heartRate]))
        let sent = configure(&host, refuse: 0x6E, code: 0x28)
        #expect(sent.map { $0[2] }.prefix(6) == [0x4A, 0x4D, 0x46, 0x6E, 0x66, 0x42])
        #expect(sent[4] == antFrame(0x66, [0, 1]))
        #expect(host.configured && host.extendedData)
    }

    /// The key: 16 hex digits; anything else is a typed error that says what to give.
    @Test func networkKeysParseOrFailWithAClearError() throws {
        #expect(try ANTNetworkKey(hex: "0123456789abcdef").bytes == [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])
        #expect(try ANTNetworkKey(hex: "01:23:45:67:89:AB:CD:EF").bytes.count == 8)
        #expect(throws: ANTHostError.self) { try ANTNetworkKey(hex: "0123") }
        #expect(throws: ANTHostError.self) { try ANTNetworkKey(hex: "0123456789ABCDEG") }
        #expect(ANTHostError.missingNetworkKey.description.contains("WORKOUT_ANT_NETWORK_KEY"))
        #expect(!(try ANTNetworkKey(hex: "0123456789ABCDEF")).description.contains("0123"))
    }
}
