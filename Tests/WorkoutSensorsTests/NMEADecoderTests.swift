import Foundation
import Testing
import WorkoutSensors

private let ggaBody = "GPGGA,123519,4807.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,"
private let rmcBody = "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"

/// Seconds since 1970 of a UTC calendar instant, by Foundation (independent of the decoder's arithmetic).
private func epoch(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> Double {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    return calendar.date(from: components)?.timeIntervalSince1970 ?? .nan
}

@Suite("NMEA decoder")
struct NMEADecoderTests {
    @Test func ggaFieldsFromTheSpecification() throws {
        var decoder = NMEADecoder()
        let readings = decoder.decode(textLine(ggaBody))
        let reading = try #require(readings.first)
        let fix = try #require(reading.fix)
        #expect(readings.count == 1)
        #expect(reading.source == .nmea(talker: NMEATalker(UInt8(ascii: "G"), UInt8(ascii: "P"))))
        #expect(fix.sentence == .gga && fix.isValid)
        #expect(close(fix.latitude, 48 + 7.038 / 60))
        #expect(close(fix.longitude, 11 + 31.324 / 60))
        #expect(fix.fixQuality == 1 && fix.satellites == 8)
        #expect(close(fix.hdop, 0.9) && close(fix.altitude, 545.4))
        #expect(reading.time == .utc(UTCTime(secondsOfDay: 12 * 3600 + 35 * 60 + 19)), "GGA has no date before an RMC")
        #expect(decoder.counters.framesDecoded == 1 && decoder.counters.droppedFrames == 0)
    }

    @Test func theWidelyCopiedChecksumIsRejectedAndCounted() {
        let sum = ggaBody.utf8.reduce(UInt8(0), ^)
        #expect(sum != 0x47)
        var decoder = NMEADecoder()
        let readings = decoder.decode(textLine(ggaBody, checksum: 0x47) + textLine(ggaBody))
        #expect(readings.count == 1, "the bad sentence is dropped, the good one after it decoded")
        #expect(decoder.counters.badChecksums == 1)
        #expect(decoder.counters.framesDecoded == 1)
    }

    @Test func rmcSpeedInMetresPerSecondCourseAndDate() throws {
        var decoder = NMEADecoder()
        let reading = try #require(decoder.decode(textLine(rmcBody)).first)
        let fix = try #require(reading.fix)
        #expect(fix.sentence == .rmc && fix.isValid)
        #expect(close(fix.speed, 22.4 * 1852 / 3600), "knots to m/s")
        #expect(close(fix.course, 84.4))
        #expect(close(fix.longitude, 11 + 31.0 / 60))
        guard case .utc(let time) = reading.time else {
            Issue.record("RMC carries UTC")
            return
        }
        #expect(time.date == CivilDate(year: 1994, month: 3, day: 23))
        #expect(time.secondsSince1970 == epoch(1994, 3, 23, 12, 35, 19))
        #expect(time.instant == Date(timeIntervalSince1970: epoch(1994, 3, 23, 12, 35, 19)))
    }

    @Test func southAndWestAreNegativeAndVoidIsInvalid() throws {
        var decoder = NMEADecoder()
        let readings = decoder.decode(
            textLine("GNRMC,001122.50,V,3351.500,S,15112.000,W,0.0,,010125,,,N")
                + textLine("GNGGA,001122.50,3351.500,S,15112.000,W,0,00,,,M,,M,,"))
        #expect(readings.count == 2)
        let rmc = try #require(readings.first?.fix)
        let gga = try #require(readings.last?.fix)
        #expect(!rmc.isValid && !gga.isValid, "status V and fix quality 0 are no fix")
        #expect(close(rmc.latitude, -(33 + 51.5 / 60)) && close(rmc.longitude, -(151 + 12.0 / 60)))
        #expect(rmc.course == nil && gga.altitude == nil && gga.hdop == nil)
        #expect(readings.first?.source == .nmea(talker: NMEATalker(UInt8(ascii: "G"), UInt8(ascii: "N"))))
        #expect(gga.totalDistance == 0)
        guard case .utc(let time) = readings.last?.time else {
            Issue.record("GGA has a time")
            return
        }
        #expect(close(time.secondsOfDay, 11 * 60 + 22.5) && time.date == CivilDate(year: 2025, month: 1, day: 1))
    }

    @Test func roundTripsWithTheEncoders() throws {
        let start = Date(timeIntervalSince1970: 1_700_000_000.25)
        var bytes: [UInt8] = []
        var expected: [(Double, Double, Double)] = []
        for second in 0..<20 {
            let latitude = -12.345678 + Double(second) * 1e-4
            let longitude = 170.5 - Double(second) * 2e-4
            let time = start.addingTimeInterval(Double(second))
            bytes += NMEA.rmc(time: time, latitude: latitude, longitude: longitude, speed: 4.2, course: 123.4)
            bytes += NMEA.gga(time: time, latitude: latitude, longitude: longitude, altitude: 612.3)
            expected.append((latitude, longitude, time.timeIntervalSince1970))
        }
        var decoder = NMEADecoder()
        let readings = decoder.decode(bytes, chunkSizes: [7, 64, 1, 300])
        #expect(readings.count == 40)
        for (index, reading) in readings.enumerated() {
            let fix = try #require(reading.fix)
            let (latitude, longitude, seconds) = expected[index / 2]
            #expect(fix.sentence == (index % 2 == 0 ? .rmc : .gga))
            #expect(close(fix.latitude, latitude, 2e-6) && close(fix.longitude, longitude, 2e-6))
            if fix.sentence == .rmc {
                #expect(close(fix.speed, 4.2, 0.003) && close(fix.course, 123.4, 0.05))
            } else {
                #expect(close(fix.altitude, 612.3, 0.05))
            }
            guard case .utc(let time) = reading.time else {
                Issue.record("every sentence carries UTC")
                continue
            }
            #expect(close(time.secondsSince1970, seconds, 0.006), "GGA takes the date of the last RMC")
        }
        #expect(decoder.counters.framesDecoded == 40 && decoder.counters.droppedFrames == 0)
        #expect(decoder.counters.resyncBytesSkipped == 0)
        #expect(decoder.counters.bytesConsumed == bytes.count)
    }

    @Test func splitAtEveryByte() {
        let bytes = textLine(rmcBody) + Array("xx".utf8) + textLine(ggaBody) + textLine("GPGSV,1,1,00")
        expectSplitInvariant({ NMEADecoder() }, bytes)
    }

    @Test func garbageBetweenSentencesIsSkippedAndCounted() {
        let garbage: [UInt8] = [0x00, 0xFF, 0x0D, 0x0A, 0x2A, 0x41, 0x42]  // includes CR LF and `*`
        var decoder = NMEADecoder()
        let readings = decoder.decode(garbage + textLine(ggaBody) + garbage + garbage + textLine(rmcBody) + garbage)
        #expect(readings.count == 2)
        #expect(decoder.counters.resyncBytesSkipped == 4 * garbage.count)
        #expect(decoder.counters.droppedFrames == 0)
    }

    @Test func aSentenceCutShortByTheNextIsMalformedAndTheNextDecoded() {
        var decoder = NMEADecoder()
        let cut = Array(textLine(ggaBody).prefix(30))
        let readings = decoder.decode(cut + textLine(rmcBody))
        #expect(readings.count == 1 && readings.first?.fix?.sentence == .rmc)
        #expect(decoder.counters.malformedFrames == 1)
    }

    @Test func missingChecksumAndUnparsableFieldsAreMalformed() {
        var decoder = NMEADecoder()
        let readings = decoder.decode(
            Array("$\(ggaBody)\r\n".utf8)  // no *HH
                + textLine("GPGGA,123519,48x7.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,")
                + textLine("GPGGA,123519,4807.038,Q,01131.324,E,1,08,0.9,545.4,M,46.9,M,,")
                + textLine("GPGGA,253519,4807.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,")
                + textLine("GPGGA,123519,4807.038,N")
                + textLine("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,321394,003.1,W")
                + textLine("GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00")
                + textLine("PGRME,15.0,M,45.0,M,25.0,M"))
        #expect(readings.isEmpty)
        #expect(decoder.counters.malformedFrames == 6)
        #expect(decoder.counters.unknownMessages == 2, "GSV and proprietary sentences")
        #expect(decoder.counters.framesDecoded == 0)
    }

    @Test func anOversizedLineIsDroppedAndTheBufferBounded() {
        var decoder = NMEADecoder()
        var readings: [SensorReading] = []
        let endless = [UInt8(ascii: "$")] + [UInt8](repeating: UInt8(ascii: "A"), count: 10_000)
        for chunk in stride(from: 0, to: endless.count, by: 97) {
            decoder.decode(Array(endless[chunk..<min(endless.count, chunk + 97)]), into: &readings)
            #expect(decoder.pendingByteCount < 256)
        }
        decoder.decode(textLine(ggaBody), into: &readings)
        #expect(readings.count == 1)
        #expect(decoder.counters.oversizedFrames == 1)
        #expect(decoder.counters.resyncBytesSkipped == endless.count - 256, "the rest skipped up to the next $")
    }

    @Test func distanceAccumulatesOncePerEpochOverValidFixesOnly() throws {
        // Along a meridian, one minute of latitude apart: haversine gives R × Δφ exactly.
        let minute = DistanceAccumulator.earthRadius * Double.pi / (180 * 60)
        var bytes: [UInt8] = []
        for step in 0..<4 {
            let time = String(format: "1200%02d", step)
            let latitude = String(format: "47%02d.0000", step)
            bytes += textLine("GPGGA,\(time),\(latitude),N,01100.0000,E,1,08,0.9,600.0,M,46.9,M,,")
            bytes += textLine("GPRMC,\(time),A,\(latitude),N,01100.0000,E,1.0,0.0,150625,,,A")
        }
        // No fix (quality 0) far away: not counted; then a void RMC: not counted.
        bytes += textLine("GPGGA,120004,5000.0000,N,01100.0000,E,0,00,,,M,,M,,")
        bytes += textLine("GPRMC,120004,V,5000.0000,N,01100.0000,E,,,150625,,,N")
        var decoder = NMEADecoder()
        let fixes = decoder.decode(bytes).compactMap(\.fix)
        #expect(fixes.count == 10)
        #expect(close(fixes[1].totalDistance, 0), "RMC of the same epoch adds nothing")
        #expect(close(fixes[7].totalDistance, 3 * minute, 1e-6))
        #expect(close(fixes[9].totalDistance, 3 * minute, 1e-6))
        #expect(close(decoder.distance.total, 3 * minute, 1e-6))
        #expect(abs(minute - 1853.25) < 0.01, "a minute of arc on the mean sphere")
    }

    @Test func ggaAfterMidnightTakesTheNextDay() {
        var decoder = NMEADecoder()
        let readings = decoder.decode(
            textLine("GPRMC,235959.50,A,4807.038,N,01131.000,E,1.0,0.0,311299,,,A")
                + textLine("GPGGA,000000.50,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
        #expect(readings.count == 2)
        #expect(readings.last?.time == .utc(UTCTime(secondsOfDay: 0.5, date: CivilDate(year: 2000, month: 1, day: 1))))
        #expect(CivilDate(year: 2024, month: 2, day: 28).next == CivilDate(year: 2024, month: 2, day: 29))
        #expect(CivilDate(year: 2100, month: 2, day: 28).next == CivilDate(year: 2100, month: 3, day: 1))
    }
}
