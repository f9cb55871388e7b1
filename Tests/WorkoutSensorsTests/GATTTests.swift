import Testing
import WorkoutSensors

@Suite("GATT payloads")
struct GATTTests {
    @Test func heartRateEightBitAndContactFlags() throws {
        let plain = try #require(GATT.parseHeartRate([0x00, 72]))
        #expect(plain == GATT.HeartRateMeasurement(heartRate: 72))
        #expect(GATT.parseHeartRate([0x06, 80])?.sensorContact == true, "supported and detected")
        #expect(GATT.parseHeartRate([0x04, 80])?.sensorContact == false, "supported, not detected")
        #expect(GATT.parseHeartRate([0x02, 80])?.sensorContact == nil, "not supported: bit 1 means nothing")
    }

    @Test func heartRateSixteenBitEnergyAndSeveralRRIntervals() throws {
        let payload: [UInt8] = [0x19] + le16(0x0101) + le16(1234) + le16(800) + le16(1024) + le16(65535)
        let measurement = try #require(GATT.parseHeartRate(payload))
        #expect(measurement.heartRate == 257, "both bytes of the u16 value")
        #expect(measurement.energyExpended == 1234)
        #expect(measurement.rrIntervals.ticks == [800, 1024, 65535])
        #expect(Array(measurement.rrIntervals) == [800.0 / 1024, 1, 65535.0 / 1024])
        var session = GATT.Session()
        let value = session.reading(characteristic: 0x2A37, payload: payload, milliseconds: 5)
        #expect(
            value
                == .heartRate(
                    HeartRateReading(
                        beatsPerMinute: 257, rrIntervals: RRIntervals(ticks: [800, 1024, 65535]), energyExpended: 1234))
        )
        // RR without energy follow the heart rate directly.
        #expect(GATT.parseHeartRate([0x10, 60] + le16(1100))?.rrIntervals.ticks == [1100])
        // More than the nine kept inline (a larger BLE MTU): all kept, in order.
        let many = (1...12).map { UInt16($0 * 100) }
        let long = try #require(GATT.parseHeartRate([0x10, 60] + many.flatMap { le16(Int($0)) }))
        #expect(long.rrIntervals.ticks == many && long.rrIntervals.count == 12)
        #expect(long.rrIntervals.last == 1200.0 / 1024 && long.rrIntervals == RRIntervals(ticks: many))
        #expect(long.rrIntervals != RRIntervals(ticks: many.dropLast()))
    }

    @Test func heartRateTruncatedOrOddIsRejected() {
        #expect(GATT.parseHeartRate([]) == nil)
        #expect(GATT.parseHeartRate([0x00]) == nil)
        #expect(GATT.parseHeartRate([0x01, 0x50]) == nil, "u16 flagged, one byte")
        #expect(GATT.parseHeartRate([0x08, 60, 0x01]) == nil, "energy flagged, one byte")
        #expect(GATT.parseHeartRate([0x10, 60, 0x00]) == nil, "an RR interval cut in half")
    }

    @Test func cscParsesAndTheSessionGivesSpeedAndCadenceAcrossRollovers() throws {
        let first: [UInt8] = [0x03] + le32(0xFFFF_FFFE) + le16(64512) + le16(65535) + le16(63488)
        #expect(
            GATT.parseCSC(first)
                == GATT.CSCMeasurement(
                    wheelRevolutions: 0xFFFF_FFFE, wheelEventTime: 64512, crankRevolutions: 65535, crankEventTime: 63488
                ))
        #expect(
            GATT.parseCSC([0x01] + le32(5) + le16(1)) == GATT.CSCMeasurement(wheelRevolutions: 5, wheelEventTime: 1))
        #expect(
            GATT.parseCSC([0x02] + le16(5) + le16(1)) == GATT.CSCMeasurement(crankRevolutions: 5, crankEventTime: 1))
        #expect(GATT.parseCSC([0x03] + le32(5) + le16(1)) == nil, "crank data flagged but missing")
        let second: [UInt8] = [0x03] + le32(2) + le16(1024) + le16(1) + le16(0)
        var session = GATT.Session()
        var values: [SpeedCadenceReading] = []
        for (payload, milliseconds) in [(first, 0), (second, 1000), (second, 3000), (second, 3999), (second, 4000)] {
            guard
                case .speedCadence(let value) = session.reading(
                    characteristic: 0x2A5B, payload: payload, milliseconds: milliseconds)
            else {
                Issue.record("a CSC value")
                return
            }
            values.append(value)
        }
        #expect(values[0].speed == nil && values[0].cadence == nil)
        #expect(close(values[1].speed, 4 * 2.105 / 2) && close(values[1].cadence, 60), "4 revs in 2 s; 2 in 2 s")
        #expect(values[1].wheel == RevolutionData(revolutions: 2, eventTime: 1))
        #expect(close(values[3].speed, 4 * 2.105 / 2), "held 2999 ms after the last revolution")
        #expect(values[4].speed == 0 && values[4].cadence == 0, "3 s without a revolution: stopped")
    }

    @Test func rscFlags() {
        #expect(
            GATT.parseRSC([0x00] + le16(3 * 256 + 128) + [170])
                == GATT.RSCMeasurement(speed: 3.5, cadence: 170, isRunning: false))
        #expect(
            GATT.parseRSC([0x07] + le16(1024) + [180] + le16(125) + le32(123_456))
                == GATT.RSCMeasurement(
                    speed: 4, cadence: 180, strideLength: 1.25, totalDistance: 12_345.6, isRunning: true))
        #expect(
            GATT.parseRSC([0x02] + le16(1024) + [180] + le32(10))
                == GATT.RSCMeasurement(speed: 4, cadence: 180, totalDistance: 1, isRunning: false))
        #expect(GATT.parseRSC([0x03] + le16(1024) + [180] + le16(125)) == nil, "total distance flagged, missing")
        var session = GATT.Session()
        #expect(
            session.reading(characteristic: 0x2A53, payload: [0x05] + le16(512) + [160] + le16(90), milliseconds: nil)
                == .stride(StrideReading(speed: 2, stepsPerMinute: 160, strideLength: 0.9, isRunning: true)))
    }

    @Test func cyclingPowerWheelTimeIsIn2048thsOfASecond() throws {
        let first: [UInt8] = le16(0x30) + le16(250) + le32(100) + le16(0) + le16(10) + le16(0)
        let second: [UInt8] = le16(0x30) + le16(0xFFFB) + le32(102) + le16(2048) + le16(11) + le16(1024)
        let parsed = try #require(GATT.parseCyclingPower(second))
        #expect(parsed.instantaneousPower == -5, "signed")
        #expect(parsed.wheelRevolutions == 102 && parsed.wheelEventTime == 2048)
        #expect(parsed.crankRevolutions == 11 && parsed.crankEventTime == 1024)
        var session = GATT.Session()
        _ = session.reading(characteristic: 0x2A63, payload: first, milliseconds: 0)
        guard case .power(let power) = session.reading(characteristic: 0x2A63, payload: second, milliseconds: 1000)
        else {
            Issue.record("a power value")
            return
        }
        #expect(close(power.speed, 2 * 2.105), "2 revolutions in 2048/2048 s (not 2 s)")
        #expect(close(power.cadence, 60))
        #expect(power.instantaneousPower == -5 && power.wheel == RevolutionData(revolutions: 102, eventTime: 1))
    }

    @Test func cyclingPowerEveryOptionalFieldInOrder() throws {
        let angles: UInt32 = 0x123 | 0x0B4 << 12
        let payload: [UInt8] =
            le16(0x0FFF) + le16(300) + [100] + le16(3200) + le32(7) + le16(2048) + le16(3) + le16(1024) + le16(500)
            + le16(0xFF9C) + le16(640) + le16(0xFFE0) + Array(le32(angles).prefix(3)) + le16(15) + le16(195) + le16(987)
        let parsed = try #require(GATT.parseCyclingPower(payload))
        #expect(parsed.instantaneousPower == 300)
        #expect(parsed.pedalBalance == PedalBalance(percent: 50, pedal: .left))
        #expect(parsed.accumulatedTorque == 3200)
        #expect(parsed.wheelRevolutions == 7 && parsed.wheelEventTime == 2048)
        #expect(parsed.crankRevolutions == 3 && parsed.crankEventTime == 1024)
        #expect(parsed.maximumForce == 500 && parsed.minimumForce == -100)
        #expect(parsed.maximumTorque == 640 && parsed.minimumTorque == -32)
        #expect(parsed.maximumAngle == 0x123 && parsed.minimumAngle == 0x0B4)
        #expect(parsed.topDeadSpotAngle == 15 && parsed.bottomDeadSpotAngle == 195)
        #expect(parsed.accumulatedEnergy == 987)
        for cut in 4..<payload.count {
            #expect(GATT.parseCyclingPower(Array(payload.prefix(cut))) == nil, "cut at \(cut)")
        }
        // Only the energy: it follows the power directly.
        #expect(GATT.parseCyclingPower(le16(0x0800) + le16(10) + le16(42))?.accumulatedEnergy == 42)
        // Bit 1 alone (balance reference) adds no field.
        #expect(GATT.parseCyclingPower(le16(0x0002) + le16(10))?.pedalBalance == nil)
        #expect(
            GATT.parseCyclingPower(le16(0x0001) + le16(10) + [51])?.pedalBalance
                == PedalBalance(percent: 25.5, pedal: .unknown))
    }

    @Test func unknownCharacteristicsAreNotDecoded() {
        var session = GATT.Session()
        #expect(session.reading(characteristic: 0x2A19, payload: [100], milliseconds: 0) == nil)
        #expect(!GATT.isSupported(0x2A19) && GATT.isSupported(0x2A63))
    }
}
