import Foundation
import Testing
import WorkoutSensors

private let strap = ANTDeviceID(number: 4711, type: 120, transmissionType: 1)

/// Heart-rate page bytes: page (with toggle), byte 1, previous beat time, beat time, count, rate.
private func hrPage(_ page: UInt8, previous: Int = 0xFFFF, time: Int, count: UInt8, rate: UInt8) -> [UInt8] {
    [page, 0xFF] + le16(previous) + le16(time) + [count, rate]
}

/// Decodes frames and returns the readings (and the decoder).
private func decodeAll(
    _ bytes: [UInt8], configuration: ANTDecoder.Configuration = .init()
) -> (
    [SensorReading], ANTDecoder
) {
    var decoder = ANTDecoder(configuration: configuration)
    let readings = decoder.decode(bytes)
    return (readings, decoder)
}

@Suite("ANT decoder")
struct ANTDecoderTests {
    @Test func channelIDMapsTheChannelAndHeartRatePagesDecode() throws {
        var bytes = channelID(0, number: 4711, type: 120)
        bytes += broadcast(0, hrPage(0x84, previous: 65000, time: 65400, count: 254, rate: 120))  // toggle set
        bytes += broadcast(0, hrPage(0x04, previous: 65400, time: 264, count: 255, rate: 121))  // time rolls over
        bytes += broadcast(0, hrPage(0x84, previous: 700, time: 1100, count: 1, rate: 122))  // count rolls over
        bytes += broadcast(0, hrPage(0x84, previous: 700, time: 1100, count: 1, rate: 122))  // no new beat
        bytes += broadcast(0, hrPage(0x00, time: 1500, count: 2, rate: 123))  // page 0: one beat later
        bytes += broadcast(0, hrPage(0x80, time: 2400, count: 4, rate: 124))  // two beats: no RR
        let (readings, decoder) = decodeAll(bytes)
        #expect(readings.count == 7)
        #expect(readings.first?.value == .antChannelID(strap))
        #expect(decoder.device(onChannel: 0) == strap)
        let rates = readings.compactMap(\.heartRate)
        #expect(readings.dropFirst().allSatisfy { $0.source == .ant(channel: 0, device: strap) && $0.time == nil })
        #expect(rates.map(\.beatsPerMinute) == [120, 121, 122, 122, 123, 124])
        #expect(rates.map(\.page) == [4, 4, 4, 4, 0, 0], "toggle bit masked")
        #expect(rates.map(\.newBeats) == [nil, 1, 2, 0, 1, 2])
        let expectedRR: [[UInt16]] = [[400], [400], [400], [], [400], []]
        #expect(rates.map(\.rrIntervals.ticks) == expectedRR)
        #expect(rates.first?.rrIntervals.first == 400.0 / 1024, "seconds")
        #expect(rates[1].beatEventTime == 264.0 / 1024 && rates[1].beatCount == 255)
        #expect(decoder.counters.framesDecoded == 7 && decoder.counters.droppedFrames == 0)
        #expect(decoder.counters.bytesConsumed == bytes.count)
    }

    @Test func bikeSpeedAndCadenceWithRolloversAndTheStopTimeout() throws {
        let wheel = 2.105
        func page(crankTime: Int, crank: Int, wheelTime: Int, wheel: Int) -> [UInt8] {
            le16(crankTime) + le16(crank) + le16(wheelTime) + le16(wheel)
        }
        let moving = broadcast(1, page(crankTime: 65024, crank: 0, wheelTime: 1000, wheel: 2))
        var bytes = channelID(1, number: 22, type: 121)
        bytes += broadcast(1, page(crankTime: 64000, crank: 65535, wheelTime: 65000, wheel: 65534))
        bytes += moving  // 4 wheel revolutions in 1536/1024 s, 1 crank revolution in 1 s, all rolled over
        for _ in 0..<12 { bytes += moving }  // no new revolution
        bytes += broadcast(1, page(crankTime: 1000, crank: 2, wheelTime: 2024, wheel: 3))
        let (readings, decoder) = decodeAll(bytes)
        let values = readings.compactMap(\.speedCadence)
        // The 11 repeats before the timeout hold the value: they add no reading (counted).
        #expect(values.count == 4)
        #expect(decoder.counters.repeatedMessages == 11)
        #expect(values[0].speed == nil && values[0].cadence == nil && values[0].distance == 0, "a baseline only")
        #expect(close(values[1].speed, 4 * wheel / 1.5) && close(values[1].cadence, 60))
        #expect(close(values[1].distance, 4 * wheel))
        #expect(values[1].wheel == RevolutionData(revolutions: 2, eventTime: 1000.0 / 1024))
        #expect(values[2].speed == 0 && values[2].cadence == 0, "12 messages without a revolution: stopped")
        #expect(close(values[3].speed, wheel) && close(values[3].distance, 5 * wheel))
        #expect(close(values[3].cadence, 60 * 2 / (1000 + 65536 - 65024) * 1024))
        #expect(values.allSatisfy { ($0.speed ?? 0).isFinite && ($0.cadence ?? 0).isFinite })
        #expect(decoder.counters.droppedFrames == 0)
    }

    @Test func cadenceOnlyAndSpeedOnlySensors() {
        let configuration = ANTDecoder.Configuration(
            wheelCircumference: 2.0,
            channels: [2: ANTDeviceID(number: 5, type: 122), 3: ANTDeviceID(number: 6, type: 123)])
        let bytes =
            broadcast(2, [0x80, 0xFF, 0xFF, 0xFF] + le16(60000) + le16(100))
            + broadcast(3, [0x00, 0xFF, 0xFF, 0xFF] + le16(100) + le16(65535))
            + broadcast(2, [0x00, 0xFF, 0xFF, 0xFF] + le16(60000 + 683) + le16(101))
            + broadcast(3, [0x80, 0xFF, 0xFF, 0xFF] + le16(612) + le16(1))
        let (readings, _) = decodeAll(bytes, configuration: configuration)
        let values = readings.compactMap(\.speedCadence)
        #expect(values.count == 4)
        #expect(close(values[2].cadence, 60 * 1024 / 683) && values[2].speed == nil && values[2].wheel == nil)
        #expect(close(values[3].speed, 2 * 2.0 / 0.5) && values[3].cadence == nil && values[3].crank == nil)
        #expect(readings[3].source == .ant(channel: 3, device: ANTDeviceID(number: 6, type: 123)))
    }

    @Test func powerOnlyPageAverageFromAccumulatedPowerWithRollovers() {
        var bytes = channelID(4, number: 900, type: 11)
        bytes += broadcast(4, [0x10, 255, 0xFF, 90] + le16(65500) + le16(200))
        let next = broadcast(4, [0x10, 1, 0x80 | 52, 0xFF] + le16(100) + le16(70))  // 2 events, 136 W·events
        bytes += next
        for _ in 0..<12 { bytes += next }
        let (readings, decoder) = decodeAll(bytes)
        let values = readings.compactMap(\.power)
        #expect(values.count == 4)  // repeats of the no-new-event reading add none
        #expect(decoder.counters.repeatedMessages == 10)
        #expect(values[0].averagePower == nil && values[0].cadence == 90 && values[0].instantaneousPower == 200)
        #expect(values[0].pedalBalance == nil && values[0].eventCount == 255 && values[0].accumulatedPower == 65500)
        #expect(values[1].averagePower == 68, "(100 + 65536 − 65500) / (1 + 256 − 255)")
        #expect(values[1].cadence == nil, "0xFF: no cadence")
        #expect(values[1].pedalBalance == PedalBalance(percent: 52, pedal: .right))
        #expect(values[2].averagePower == nil, "no new event: nothing to average")
        #expect(values[3].averagePower == 0, "stopped after the timeout")
    }

    @Test func crankTorquePage() throws {
        var bytes = channelID(5, number: 901, type: 11)
        bytes += broadcast(5, [0x12, 10, 20, 0xFF] + le16(64000) + le16(65000))
        bytes += broadcast(5, [0x12, 12, 22, 85] + le16(64000 + 2890 - 65536) + le16(65000 + 1200 - 65536))
        bytes += broadcast(5, [0x12, 13, 22, 0] + le16(64000 + 2890 - 65536) + le16(65000 + 1200 - 65536))
        let (readings, decoder) = decodeAll(bytes)
        let values = readings.compactMap(\.power)
        #expect(values.count == 3)
        #expect(values[0].averagePower == nil && values[0].cadence == nil)
        #expect(close(values[1].averagePower, 128 * Double.pi * 1200 / 2890))
        #expect(close(values[1].cadence, 60 * 2 * 2048 / 2890.0))
        #expect(close(values[1].averageTorque, 1200 / 64.0))
        #expect(values[2].averagePower == 0 && values[2].cadence == 0, "an event without crank period: coasting")
        #expect(decoder.counters.unknownMessages == 0)
    }

    @Test func footPodDistanceRollsOverAt256Metres() {
        var bytes = channelID(6, number: 33, type: 124)
        bytes += broadcast(6, [0x01, 100, 250, 250, 8 << 4 | 3, 128, 250, 0])
        bytes += broadcast(6, [0x01, 0, 4, 3, 4 << 4 | 3, 64, 4, 0])
        bytes += broadcast(6, [0x02, 0xFF, 0xFF, 88, 4 << 4 | 3, 0, 0, 0])
        let (readings, _) = decodeAll(bytes)
        let values = readings.compactMap(\.stride)
        #expect(values.count == 3)
        #expect(values[0] == StrideReading(page: 1, speed: 3.5, totalDistance: 0, totalStrides: 0, time: 250.5))
        #expect(values[1].totalDistance == 8.75, "3.25 + 256 − 250.5")
        #expect(values[1].totalStrides == 10 && values[1].speed == 3.25 && values[1].time == 4)
        #expect(values[2] == StrideReading(page: 2, speed: 3, stepsPerMinute: 2 * 88.25))
    }

    @Test func channelEventsStartupAndSerialErrors() {
        let bytes =
            channelID(0, number: 4711, type: 120) + antFrame(0x40, [0, 0x01, 0x07]) + antFrame(0x6F, [0x20])
            + antFrame(0xAE, [0x02]) + antFrame(0x3E, Array("AP2USB".utf8) + [0])
        let (readings, decoder) = decodeAll(bytes)
        #expect(
            readings.map(\.value) == [
                .antChannelID(strap), .antChannelEvent(messageID: 1, code: 7), .antStartup(reason: 0x20),
                .antSerialError(code: 2),
            ])
        #expect(readings[1].source == .ant(channel: 0, device: strap))
        #expect(readings[2].source == .ant(channel: nil, device: nil))
        #expect(decoder.counters.unknownMessages == 1, "the version message")
    }

    @Test func extendedMessagesCarryTheChannelID() {
        let page = hrPage(0x04, previous: 100, time: 600, count: 3, rate: 99)
        let bytes = antFrame(0x4E, [7] + page + [0x80] + le16(4711) + [120, 1])
        let (readings, decoder) = decodeAll(bytes)
        #expect(readings.count == 1)
        #expect(readings.first?.source == .ant(channel: 7, device: strap))
        #expect(readings.first?.heartRate?.beatsPerMinute == 99)
        #expect(decoder.device(onChannel: 7) == strap)
    }

    @Test func dataOnAnUnknownChannelBadLengthsAndUnknownPagesAreCounted() {
        let bytes =
            broadcast(9, hrPage(0x04, previous: 1, time: 2, count: 3, rate: 4))  // no channel id: unknown
            + antFrame(0x4E, [0, 1, 2, 3, 4])  // too short for a broadcast
            + antFrame(0x51, [0, 1])  // too short for a channel id
            + channelID(4, number: 1, type: 11) + broadcast(4, [0x01, 0xAC, 0, 0, 0, 0, 0, 0])  // calibration page
            + channelID(8, number: 1, type: 17) + broadcast(8, [0x37, 0, 0, 0, 0, 0, 0, 0])  // an FE-C page not read
        let (readings, decoder) = decodeAll(bytes)
        #expect(
            readings.map(\.value) == [
                .antChannelID(ANTDeviceID(number: 1, type: 11, transmissionType: 1)),
                .antChannelID(ANTDeviceID(number: 1, type: 17, transmissionType: 1)),
            ])
        #expect(decoder.counters.unknownMessages == 3)
        #expect(decoder.counters.malformedFrames == 2)
        #expect(decoder.counters.framesDecoded == 2)
    }

    @Test func aBadChecksumDropsTheFrameAndTheNextOneDecodes() {
        let good = broadcast(0, hrPage(0x04, previous: 100, time: 600, count: 3, rate: 99))
        let bad = antFrame(
            0x4E, [0] + hrPage(0x04, previous: 100, time: 600, count: 3, rate: 98), corruptChecksum: true)
        #expect(!bad.dropFirst().contains(0xA4))
        let (readings, decoder) = decodeAll(channelID(0, number: 4711, type: 120) + bad + good)
        #expect(readings.compactMap(\.heartRate).map(\.beatsPerMinute) == [99])
        #expect(decoder.counters.badChecksums == 1)
        #expect(decoder.counters.resyncBytesSkipped == bad.count, "the bad frame's bytes skipped to the next sync")
    }

    @Test func garbageWithFalseSyncBytesResynchronises() {
        let frames =
            channelID(0, number: 4711, type: 120)
            + broadcast(0, hrPage(0x04, previous: 100, time: 600, count: 3, rate: 99))
            + broadcast(0, hrPage(0x84, previous: 600, time: 1100, count: 4, rate: 100))
        let clean = decodeAll(frames).0
        let garbage: [UInt8] = [0x00, 0xA4, 0xFF, 0xA4, 0x00, 0x13, 0xA4, 0x02, 0x11]
        var noisy: [UInt8] = garbage
        var index = 0
        for frame in [Array(frames[0..<9]), Array(frames[9..<22]), Array(frames[22...])] {
            noisy += frame + Array(garbage.prefix(index * 3))
            index += 1
        }
        let (readings, decoder) = decodeAll(noisy)
        #expect(readings == clean)
        #expect(decoder.counters.resyncBytesSkipped > 0)
        #expect(decoder.counters.framesDecoded == 3)
    }

    @Test func splitAtEveryByte() {
        let bytes =
            [0x11, 0xA4] + channelID(0, number: 4711, type: 120) + channelID(1, number: 22, type: 121)
            + broadcast(0, hrPage(0x04, previous: 100, time: 600, count: 3, rate: 99))
            + broadcast(1, le16(100) + le16(2) + le16(200) + le16(3)) + [0xA4, 0x30]
            + broadcast(1, le16(1124) + le16(3) + le16(712) + le16(5))
            + antFrame(0x4E, [0] + hrPage(0x04, previous: 100, time: 600, count: 3, rate: 98), corruptChecksum: true)
        expectSplitInvariant({ ANTDecoder() }, bytes)
    }

    @Test func roundTripsWithTheEncoders() throws {
        var bytes = ANT.channelID(channel: 0, deviceNumber: 101, type: .heartRate)
        bytes += ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence)
        bytes += ANT.channelID(channel: 2, deviceNumber: 103, type: .bicyclePower)
        bytes += ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod)
        for second in 0..<300 {
            bytes += ANT.broadcast(
                channel: 0,
                ANT.heartRatePage(
                    page4: true, toggle: second % 8 >= 4, beatTime: (second * 1024 + 512) & 0xFFFF,
                    previousBeatTime: (second * 1024 + 512 - 410) & 0xFFFF, beatCount: second * 2,
                    heartRate: 140 + second % 5))
            bytes += ANT.broadcast(
                channel: 1,
                ANT.speedCadencePage(
                    crankTime: (second * 1024) & 0xFFFF, crankRevolutions: (65530 + second * 3 / 2) & 0xFFFF,
                    wheelTime: (second * 1024) & 0xFFFF, wheelRevolutions: (65000 + second * 4) & 0xFFFF))
            bytes += ANT.broadcast(
                channel: 2,
                ANT.powerPage(eventCount: second, cadence: 90, accumulatedPower: (second * 250) & 0xFFFF, power: 250))
            bytes += ANT.broadcast(
                channel: 3,
                ANT.footPodPage(time: Double(second), distance: Double(second) * 3.5, speed: 3.5, strides: second))
        }
        var decoder = ANTDecoder()
        let readings = decoder.decode(bytes, chunkSizes: [5, 13, 100, 1, 4096])
        #expect(decoder.counters.framesDecoded == 4 + 4 * 300 && decoder.counters.droppedFrames == 0)
        #expect(decoder.counters.unknownMessages == 0 && decoder.counters.resyncBytesSkipped == 0)
        let rates = readings.compactMap(\.heartRate)
        #expect(rates.count == 300)
        #expect(rates.enumerated().allSatisfy { $0.element.beatsPerMinute == 140 + $0.offset % 5 })
        #expect(rates.dropFirst().allSatisfy { $0.newBeats == 2 && $0.rrIntervals.ticks == [410] })
        let speeds = readings.compactMap(\.speedCadence).dropFirst()
        #expect(speeds.count == 299)
        #expect(speeds.allSatisfy { close($0.speed, 4 * 2.105, 1e-9) }, "across the 16-bit rollovers")
        #expect(close(speeds.last?.distance, 299 * 4 * 2.105, 1e-6))
        let cadences = speeds.compactMap(\.cadence)
        #expect(cadences.allSatisfy { $0 == 60 || $0 == 120 || $0 == 90 }, "1 or 2 revolutions a second, or held")
        let powers = readings.compactMap(\.power).dropFirst()
        #expect(powers.count == 299 && powers.allSatisfy { $0.averagePower == 250 && $0.instantaneousPower == 250 })
        let strides = readings.compactMap(\.stride)
        #expect(strides.count == 300)
        #expect(close(strides.last?.totalDistance, 299 * 3.5, 1 / 16), "over four 256 m rollovers")
        #expect(strides.last?.totalStrides == 299 && strides.last?.speed == 3.5)
    }

    @Test func connectionLostDropsThePartialFrameAndThePreviousValues() {
        var decoder = ANTDecoder()
        var readings: [SensorReading] = []
        let page = le16(100) + le16(2) + le16(200) + le16(3)
        decoder.decode(
            channelID(1, number: 22, type: 121) + broadcast(1, page) + Array(broadcast(1, page).prefix(6)),
            into: &readings)
        #expect(decoder.pendingByteCount == 6)
        decoder.connectionLost()
        #expect(decoder.pendingByteCount == 0 && decoder.counters.bytesDroppedOnDisconnect == 6)
        readings = decoder.decode(broadcast(1, le16(1124) + le16(3) + le16(712) + le16(5)))
        #expect(readings.count == 1 && readings.first?.speedCadence?.speed == nil, "no rate across the gap")
        #expect(decoder.device(onChannel: 1)?.type == 121, "the channel map is kept")
    }
}
