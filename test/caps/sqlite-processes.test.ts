import { describeCapLoad } from './capLoad.js';
import { sqliteEngine } from './databases.js';
import { describeKilledHolder } from './killedHolder.js';

describeCapLoad(sqliteEngine);
describeKilledHolder(sqliteEngine);
