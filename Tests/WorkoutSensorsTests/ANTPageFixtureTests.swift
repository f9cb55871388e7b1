import Testing
import WorkoutSensors

/// An extended broadcast (flag 0x80 with the channel id) of `device` carrying `page`.
private func extended(_ channel: UInt8, _ page: [UInt8], number: UInt16, type: UInt8) -> [UInt8] {
    antFrame(0x4E, [channel] + page + [0x80, UInt8(number & 0xFF), UInt8(number >> 8), type, 1])
}

/// An ANT+ device as a fixture addresses it (the channel it is heard on, its device number and type).
private struct FixtureDevice {
    let channel: UInt8
    let number: UInt16
    let type: UInt8

    /// This device's extended broadcasts of `pages`, in order.
    func frames(_ pages: [[UInt8]]) -> [UInt8] {
        pages.flatMap { extended(channel, $0, number: number, type: type) }
    }

    /// What a new decoder reads from this device's extended broadcasts of `pages`, in order.
    func decode(_ pages: [[UInt8]]) -> [SensorReading] {
        var decoder = ANTDecoder()
        return decoder.decode(frames(pages))
    }
}

/// ANT+ page layouts pinned with byte fixtures decoded by an independent implementation, openant
/// 1.3.4 (`openant.devices.*.on_data` fed the same 8 bytes; values noted beside each), and the ANT+
/// device profiles where openant has no decoder. Our simulator's encoders and our decoders share
/// code: these fixtures are what keeps a shared misreading from hiding.
@Suite("ANT+ page fixtures from the profiles and openant")
struct ANTPageFixtureTests {
    /// Heart rate page 4: openant reads heart rate 72, beat count 32, beat time 4.900390625 s,
    /// previous beat 4.0 s; page 2 (toggle set): manufacturer 15, serial 12345; page 3: byte 7 is
    /// still the heart rate (73).
    @Test func heartRatePages() {
        let readings = FixtureDevice(channel: 0, number: 4711, type: 120).decode([
            [0x04, 0xFF, 0x00, 0x10, 0x9A, 0x13, 0x20, 0x48],
            [0x82, 0x0F, 0x39, 0x30, 0x9A, 0x13, 0x20, 0x48],
            [0x83, 0x05, 0x07, 0x2A, 0x9A, 0x13, 0x21, 0x49],
        ])
        let rates = readings.compactMap(\.heartRate)
        #expect(rates.map(\.beatsPerMinute) == [72, 72, 73])
        #expect(rates.first?.beatCount == 32)
        #expect(rates.first?.beatEventTime == 4.900390625)
        #expect(rates.first?.rrIntervals.map { $0 } == [0.900390625])
        let info = readings.compactMap { reading -> ANTDeviceInfo? in
            if case .antDeviceInfo(let info) = reading.value { info } else { nil }
        }
        #expect(info.first?.manufacturer == 15)
        #expect(info.first?.serial == 12345 << 16)
        #expect(info.last?.model == 0x2A && info.last?.hardwareVersion == 5 && info.last?.softwareVersion == 7)
        #expect(readings.allSatisfy { $0.source == .ant(channel: 0, device: ANTDeviceID(number: 4711, type: 120, transmissionType: 1)) })
    }

    /// Power page 0x10: openant reads instantaneous 260 W, cadence 91 rpm and average (0x290A −
    /// 0x2710) / 2 = 253 W from the second page.
    @Test func powerOnlyPage() {
        let powers = FixtureDevice(channel: 2, number: 9, type: 11).decode([
            [0x10, 0x01, 0xFF, 0x5A, 0x10, 0x27, 0xFA, 0x00],
            [0x10, 0x03, 0xFF, 0x5B, 0x0A, 0x29, 0x04, 0x01],
        ]).compactMap(\.power)
        #expect(powers.map(\.instantaneousPower) == [250, 260])
        #expect(powers.last?.averagePower == 253)
        #expect(powers.last?.cadence == 91)
    }

    /// Crank torque page 0x12: the profile's average power 128π × Δtorque / Δperiod = 128π × 3424 /
    /// 2816 ≈ 488.9 W, torque 3424 / (32 × 2) = 53.5 N·m (openant agrees on the torque; its power, 20 W,
    /// comes from a misplaced parenthesis in its crank-period delta, which adds 65536).
    @Test func crankTorquePage() {
        let powers = FixtureDevice(channel: 2, number: 9, type: 11).decode([
            [0x12, 0x05, 0x05, 0x55, 0x00, 0x10, 0x00, 0x20],
            [0x12, 0x07, 0x07, 0x56, 0x00, 0x1B, 0x60, 0x2D],
        ]).compactMap(\.power)
        let last = powers.last
        #expect(last?.averageTorque == 53.5)
        #expect(abs((last?.averagePower ?? 0) - 128 * Double.pi * 3424 / 2816) < 1e-9)
        #expect(abs((last?.cadence ?? 0) - 60 * 2 / (2816.0 / 2048)) < 1e-9)
    }

    /// Wheel torque page 0x11 (profile: event count, wheel ticks, cadence, wheel period 1/2048 s,
    /// torque 1/32 N·m): 2 events over 2048 ticks = 1 s with 640/32 = 20 N·m → 128π × 640 / 2048 W, and
    /// 2 wheel revolutions a second × 2.105 m.
    @Test func wheelTorquePage() {
        let powers = FixtureDevice(channel: 2, number: 9, type: 11).decode([
            [0x11, 0x01, 0x10, 0xFF, 0x00, 0x08, 0x00, 0x01],
            [0x11, 0x03, 0x12, 0xFF, 0x00, 0x10, 0x80, 0x03],
        ]).compactMap(\.power)
        #expect(abs((powers.last?.averagePower ?? 0) - 128 * Double.pi * 640 / 2048) < 1e-9)
        #expect(abs((powers.last?.speed ?? 0) - 2 * 2.105) < 1e-9)
        #expect(powers.last?.page == 0x11)
    }

    /// Crank torque frequency page 0x20 (profile: big-endian event count, slope 1/10 N·m/Hz, time stamp
    /// 1/2000 s, torque ticks): with a calibration offset of 500 Hz (page 0x01, 0x10, 0x01), slope 3.0,
    /// 2 events in 2000 ticks (1 s) with 560 torque ticks: cadence 120 rpm, torque (560 − 500) / 3 = 20
    /// N·m, power 20 × 120 × π / 30 ≈ 251 W.
    @Test func crankTorqueFrequencyPage() {
        let calibration: [UInt8] = [0x01, 0x10, 0x01, 0xFF, 0xFF, 0xFF, 0x01, 0xF4]  // offset 500
        let powers = FixtureDevice(channel: 2, number: 9, type: 11).decode([
            calibration,
            [0x20, 0x01, 0x00, 0x1E, 0x10, 0x00, 0x20, 0x00],
            [0x20, 0x03, 0x00, 0x1E, 0x17, 0xD0, 0x22, 0x30],
        ]).compactMap(\.power)
        #expect(powers.count == 2)
        #expect(abs((powers.last?.cadence ?? 0) - 120) < 1e-9)
        #expect(abs((powers.last?.averagePower ?? 0) - 20 * 120 * Double.pi / 30) < 1e-6)
    }

    /// FE-C general page 16 and trainer page 25: openant reads equipment type 25, speed 6.928 m/s,
    /// instantaneous power 300 W (0x2C + low nibble 1 × 256), cadence 90, then average power
    /// (0x2968 − 0x2710) / 2 = 300 W.
    @Test func fitnessEquipmentPages() {
        let readings = FixtureDevice(channel: 4, number: 77, type: 17).decode([
            [0x10, 0x19, 0x50, 0x2A, 0x10, 0x1B, 0x8C, 0x34],
            [0x19, 0x10, 0x5A, 0x10, 0x27, 0x2C, 0x31, 0x30],
            [0x19, 0x12, 0x5B, 0x68, 0x29, 0x2E, 0x31, 0x30],
            [0x10, 0x19, 0x54, 0x30, 0x10, 0x1B, 0x8C, 0x34],
        ])
        let fe = readings.compactMap { reading -> FitnessEquipmentReading? in
            if case .fitnessEquipment(let value) = reading.value { value } else { nil }
        }
        #expect(fe.count == 4)
        #expect(fe.first?.equipmentType == 25)
        #expect(fe.first?.speed == 6.928)
        #expect(fe.first?.heartRate == 140)
        #expect(fe[1].instantaneousPower == 300 && fe[1].cadence == 90)
        #expect(fe[2].averagePower == 300 && fe[2].instantaneousPower == 302)
        #expect(fe.last?.totalDistance == 6)  // 0x2A → 0x30 metres
        #expect(fe.last?.elapsedTime == 21)  // 0x54 quarter seconds
    }

    /// Common pages 80 and 81: openant reads hardware revision 3, manufacturer 32, model 1337, serial
    /// 123456789.
    @Test func commonPages() {
        let info = FixtureDevice(channel: 2, number: 9, type: 11).decode([
            [0x50, 0xFF, 0xFF, 0x03, 0x20, 0x00, 0x39, 0x05],
            [0x51, 0xFF, 0xFF, 0x0B, 0x15, 0xCD, 0x5B, 0x07],
        ]).compactMap { reading -> ANTDeviceInfo? in
            if case .antDeviceInfo(let info) = reading.value { info } else { nil }
        }
        #expect(info.first == ANTDeviceInfo(manufacturer: 32, model: 1337, hardwareVersion: 3))
        #expect(info.last?.serial == 123_456_789)
        #expect(ANTDeviceInfo.manufacturerName(32) == "Wahoo Fitness")
    }

    /// Speed and cadence (121) has no page number: a crank time whose low byte is 0x50 or 0x51 is data,
    /// not a common page.
    @Test func speedAndCadenceHasNoCommonPages() {
        var decoder = ANTDecoder()
        let readings = decoder.decode(FixtureDevice(channel: 1, number: 5, type: 121).frames([
            [0x50, 0x04, 0x10, 0x00, 0x00, 0x08, 0x20, 0x00],
            [0x51, 0x08, 0x11, 0x00, 0x00, 0x0C, 0x22, 0x00],
        ]))
        #expect(readings.compactMap(\.speedCadence).count == 2)
        #expect(decoder.counters.unknownMessages == 0)
    }

    /// One scanning channel hearing two heart-rate straps: each strap's RR comes from its own beats.
    @Test func stateIsKeptPerDeviceNotPerChannel() {
        var decoder = ANTDecoder()
        // Strap A beats every 1024 ticks (1 s), strap B every 512 (0.5 s); interleaved on channel 0.
        var bytes: [UInt8] = []
        for beat in 0..<4 {
            bytes += extended(0, [0x00, 0xFF, 0xFF, 0xFF] + le16(beat * 1024) + [UInt8(beat), 60], number: 1, type: 120)
            bytes += extended(0, [0x00, 0xFF, 0xFF, 0xFF] + le16(beat * 512) + [UInt8(beat), 120], number: 2, type: 120)
        }
        let readings = decoder.decode(bytes)
        func rr(_ number: UInt16) -> [Double] {
            readings.filter { $0.source == .ant(channel: 0, device: ANTDeviceID(number: number, type: 120, transmissionType: 1)) }
                .compactMap(\.heartRate).flatMap { Array($0.rrIntervals) }
        }
        #expect(rr(1) == [1, 1, 1])
        #expect(rr(2) == [0.5, 0.5, 0.5])
    }
}
